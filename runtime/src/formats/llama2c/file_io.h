// Plain POSIX file access for the llama2.c reader and writer: exact reads with
// typed errors, and writes to a temporary that is renamed over the destination
// only when complete. No mmap: mapped weights would be resident a second time
// next to the panels they are copied into.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kvrt/error.h"

namespace kvrt::llama2c {

class InputFile {
 public:
  // Io{operation: "open" | "stat"} on failure.
  // `what` names the expected content in the error for a path that is not a
  // regular file ("a FIFO, not a model file").
  static Result<InputFile> Open(const std::string& path, std::string_view what = "a llama2.c file");
  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&&) = delete;
  InputFile(const InputFile&) = delete;
  ~InputFile();

  uint64_t size() const { return size_; }
  uint64_t position() const { return position_; }
  // Exactly out.size() bytes: Truncated{context} at the end of the file, Io otherwise.
  Result<void> Read(std::span<uint8_t> out, std::string_view context);

 private:
  InputFile(std::string path, int fd, uint64_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t position_ = 0;
};

// The whole file, for small inputs such as tokenizer.bin; InvalidArgument above
// `limit` bytes.
Result<std::vector<uint8_t>> ReadSmallFile(const std::string& path, uint64_t limit);

class OutputFile {
 public:
  // Creates a fresh temporary next to `path` (Io{operation: "create temporary"}),
  // unless `path` is a FIFO, socket or device (RequireReplaceableDestination).
  static Result<OutputFile> Create(const std::string& path);
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  OutputFile(const OutputFile&) = delete;
  // Removes the temporary unless Commit succeeded.
  ~OutputFile();

  Result<void> Write(std::span<const uint8_t> bytes);
  // fsync, then rename over the destination.
  Result<void> Commit();

 private:
  OutputFile(std::string path, std::string temporary, int fd)
      : path_(std::move(path)), temporary_(std::move(temporary)), fd_(fd) {}
  std::string path_;
  std::string temporary_;
  int fd_ = -1;
  bool committed_ = false;
};

// Writes `bytes` to `path` through an OutputFile.
Result<void> WriteFileAtomically(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace kvrt::llama2c
