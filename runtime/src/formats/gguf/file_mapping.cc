#include "formats/gguf/file_mapping.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

#include "core/regular_file.h"
#include "core/io_error.h"

namespace kvrt::gguf {

Result<std::shared_ptr<const FileMapping>> FileMapping::Open(const std::string& path) try {
  Result<RegularFile> file = OpenRegularFile(path, "a GGUF file");
  if (!file) return Fail(std::move(file.error()));
  std::shared_ptr<FileMapping> mapping(new FileMapping());
  mapping->path_ = path;
  mapping->size_ = static_cast<size_t>(file->size());
  if (mapping->size_ > 0) {  // mmap of length 0 is an error; an empty file maps to nothing
    void* address = ::mmap(nullptr, mapping->size_, PROT_READ, MAP_PRIVATE, file->fd(), 0);
    if (address == MAP_FAILED) {
      return Fail(IoError("map", path, errno));
    }
    mapping->data_ = static_cast<const uint8_t*>(address);
    mapping->mapped_ = true;
  }
  // `file` closes the descriptor; the mapping keeps the file referenced.
  return std::shared_ptr<const FileMapping>(std::move(mapping));
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the mapping of " + path);
}

Result<std::shared_ptr<const FileMapping>> FileMapping::FromBytes(std::vector<uint8_t> bytes,
                                                                  std::string name) try {
  std::shared_ptr<FileMapping> mapping(new FileMapping());
  mapping->path_ = std::move(name);
  mapping->owned_ = std::move(bytes);
  mapping->data_ = mapping->owned_.data();
  mapping->size_ = mapping->owned_.size();
  return std::shared_ptr<const FileMapping>(std::move(mapping));
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate an in-memory mapping");
}

FileMapping::~FileMapping() {
  if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace kvrt::gguf
