// Files a user names on the command line (a prompt, a requests file, a benchmark
// run, a gate file), opened without ever blocking: open(O_NONBLOCK), then fstat,
// and anything but a regular file (a FIFO would block the read, a device never end
// it, a directory has no bytes) is refused before a byte is read.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "kvrt/error.h"

namespace kvrt::cli {

class InputFile {
 public:
  // `what` names the file's role in messages ("a requests file").
  // NotRegularFile{path, kind} ("<path> is a FIFO, not a requests file"), or
  // Io{operation, path, os_error} when it cannot be opened or examined.
  static Result<InputFile> Open(const std::string& path, const std::string& what);

  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&&) = delete;
  InputFile(const InputFile&) = delete;
  ~InputFile();

  uint64_t size() const { return size_; }  // at open
  const std::string& path() const { return path_; }
  // Up to out.size() bytes at `offset`: the count read, 0 at the end. Io on failure.
  Result<size_t> ReadAt(uint64_t offset, std::span<char> out);

 private:
  InputFile(std::string path, int fd, uint64_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The whole file: InvalidArgument past `max_bytes` (a file that grew past it
// while being read too), Io when a read fails; with a path, InputFile::Open's
// errors first.
Result<std::string> ReadInputFile(InputFile& file, const std::string& what, uint64_t max_bytes);
Result<std::string> ReadInputFile(const std::string& path, const std::string& what, uint64_t max_bytes);

}  // namespace kvrt::cli
