#include "formats/gguf/file_mapping.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

#include "formats/llmcp35/checkpoint_errors.h"

namespace kvrt::gguf {
namespace {

const char* FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

Result<std::shared_ptr<const FileMapping>> FileMapping::Open(const std::string& path) try {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Fail(llmcp35::Io("open", path, errno));
  struct stat status {};
  if (::fstat(fd, &status) != 0) {
    const int error = errno;
    ::close(fd);
    return Fail(llmcp35::Io("stat", path, error));
  }
  if (!S_ISREG(status.st_mode)) {
    ::close(fd);
    const std::string kind = FileKind(status.st_mode);
    return Fail(ErrorCode::kNotRegularFile, {{"path", path}, {"kind", kind}},
                path + " is " + kind + ", not a GGUF file");
  }
  std::shared_ptr<FileMapping> mapping(new FileMapping());
  mapping->path_ = path;
  mapping->size_ = static_cast<size_t>(status.st_size);
  if (mapping->size_ > 0) {  // mmap of length 0 is an error; an empty file maps to nothing
    void* address = ::mmap(nullptr, mapping->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (address == MAP_FAILED) {
      const int error = errno;
      ::close(fd);
      return Fail(llmcp35::Io("map", path, error));
    }
    mapping->data_ = static_cast<const uint8_t*>(address);
    mapping->mapped_ = true;
  }
  ::close(fd);  // the mapping keeps the file referenced
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
