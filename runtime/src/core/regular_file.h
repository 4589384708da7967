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

// Every writer of the runtime publishes a file by renaming a complete temporary
// over `path`, which replaces whatever directory entry is there: given a FIFO or
// a device (run as root, `kvrt synth --tokenizer /dev/full`) it used to replace
// that node with a regular file. Called before the temporary is made:
// NotRegularFile{path, kind} "<path> is a FIFO; kvrt writes only a new file or
// over a regular file" for a FIFO, socket or device; Io{operation: "stat"} when
// `path` cannot be examined. A missing path and a regular file pass, and so do a
// symbolic link (the rename replaces the link, never its target) and a directory
// (the rename fails with a typed Io error). Another process may still put a node
// there between this check and the rename; that race is not closed.
Result<void> RequireReplaceableDestination(const std::string& path);

}  // namespace kvrt
