// Opening an input path without ever blocking on it.
//
// A plain open(O_RDONLY) of a FIFO waits for a writer, forever; a read of a
// character device (/dev/zero) never ends. Every reader of the runtime opens its
// input through OpenRegularFile: open(O_RDONLY | O_NONBLOCK | O_CLOEXEC), fstat,
// and only a regular file is accepted (O_NONBLOCK has no effect on reads of a
// regular file).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kvrt/error.h"

namespace kvrt {

// An open descriptor; closed by the destructor unless released.
class RegularFile {
 public:
  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&&) = delete;
  RegularFile(const RegularFile&) = delete;
  ~RegularFile();

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }
  // Hands the descriptor to the caller, who closes it.
  int Release();

 private:
  friend Result<RegularFile> OpenRegularFile(const std::string& path, std::string_view expected,
                                             std::string_view open_operation);
  RegularFile(int fd, uint64_t size) : fd_(fd), size_(size) {}
  int fd_ = -1;
  uint64_t size_ = 0;
};

// "a directory", "a FIFO", "a socket", "a character device", "a block device".
const char* FileKindName(unsigned mode);

// Io{operation: open_operation | "stat"} when the path cannot be opened or
// examined; NotRegularFile{path, kind} with the message "<path> is a FIFO, not
// <expected>" when it names anything but a regular file (`expected`: "a GGUF
// file", ...).
Result<RegularFile> OpenRegularFile(const std::string& path, std::string_view expected,
                                    std::string_view open_operation = "open");

}  // namespace kvrt
