#include "formats/gguf/file_mapping.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <new>
#include <optional>
#include <utility>

#include "core/regular_file.h"
#include "core/io_error.h"

namespace kvrt::gguf {
namespace {

// Bytes per read(): large enough that the system calls cost nothing next to the
// copy, small enough that a signal interrupting one loses little.
constexpr size_t kReadChunk = size_t{64} << 20;

Error Shrank(const std::string& path, uint64_t expected, uint64_t actual) {
  return Error(ErrorCode::kTruncated,
               {{"context", path}, {"expected", expected}, {"actual", actual}},
               path + " ends after " + std::to_string(actual) + " bytes, but had " +
                   std::to_string(expected) + " when it was opened (it shrank while being read)");
}

// Exactly out.size() bytes from the start of `fd`.
Result<void> ReadWhole(int fd, const std::string& path, std::span<uint8_t> out) {
  size_t done = 0;
  while (done < out.size()) {
    const size_t want = std::min(kReadChunk, out.size() - done);
    const ssize_t got = ::pread(fd, out.data() + done, want, static_cast<off_t>(done));
    if (got < 0) {
      if (errno == EINTR) continue;
      return Fail(IoError("read", path, errno));
    }
    if (got == 0) return Fail(Shrank(path, out.size(), done));
    done += static_cast<size_t>(got);
  }
  return {};
}

}  // namespace

Result<std::shared_ptr<const FileMapping>> FileMapping::Open(const std::string& path) try {
  Result<RegularFile> file = OpenRegularFile(path, "a GGUF file");
  if (!file) return Fail(std::move(file.error()));
  if (file->size() > SIZE_MAX) {
    return Fail(ErrorCode::kSizeOverflow, {{"context", path}}, path + " is larger than the address space");
  }
  const size_t size = static_cast<size_t>(file->size());
  // Huge pages: every byte is written once here and read again when the tensors
  // are decoded or packed, so the buffer is swept whole like the weights.
  std::optional<Buffer<uint8_t>> buffer = Buffer<uint8_t>::Allocate(size, Pages::kHuge);
  if (!buffer) {
    return Fail(ErrorCode::kAllocationFailed, {{"bytes", uint64_t{size}}},
                "could not allocate " + std::to_string(size) + " bytes to read " + path);
  }
  if (auto read = ReadWhole(file->fd(), path, buffer->span()); !read) return Fail(std::move(read.error()));
  std::shared_ptr<FileMapping> mapping(new FileMapping());
  mapping->path_ = path;
  mapping->read_ = std::move(*buffer);
  mapping->data_ = mapping->read_.data();
  mapping->size_ = size;
  return std::shared_ptr<const FileMapping>(std::move(mapping));
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the contents of " + path);
}

Result<std::shared_ptr<const FileMapping>> FileMapping::FromBytes(std::vector<uint8_t> bytes,
                                                                  std::string name) try {
  std::shared_ptr<FileMapping> mapping(new FileMapping());
  mapping->path_ = std::move(name);
  mapping->given_ = std::move(bytes);
  mapping->data_ = mapping->given_.data();
  mapping->size_ = mapping->given_.size();
  return std::shared_ptr<const FileMapping>(std::move(mapping));
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate an in-memory mapping");
}

}  // namespace kvrt::gguf
