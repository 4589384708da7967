// The lines of a `kvrt batch` requests file, read in chunks: the file is never
// held whole, so its size does not matter, only the longest line's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "input_file.h"
#include "kvrt/error.h"

namespace kvrt::cli {

// A request line carries at most one prompt, which must fit a context: 16 MiB is
// four million tokens of four bytes, and bounds what one line costs to parse and
// encode (a prompt of 100 MB used to take 7 GB before its PromptTooLong).
inline constexpr size_t kMaxRequestLineBytes = size_t{16} << 20;

class RequestLines {
 public:
  // NotRegularFile for anything but a regular file; Io when it cannot be opened.
  static Result<RequestLines> Open(const std::string& path);

  // The next line without its '\n' (valid until the next call), or nullopt at the
  // end of the file. InvalidArgument "requests line N is longer than ..." for a
  // line past kMaxRequestLineBytes, Io for a failed read.
  Result<std::optional<std::string_view>> Next();
  // The number of the line Next returned last (1-based).
  size_t line_number() const { return line_number_; }
  // Back to the first line, for a second pass.
  void Rewind();

 private:
  explicit RequestLines(InputFile file) : file_(std::move(file)) {}
  // Appends the next chunk of the file to buffer_; false at the end of the file.
  Result<bool> Fill();

  InputFile file_;
  uint64_t offset_ = 0;      // of the next byte to read
  std::vector<char> buffer_;
  size_t begin_ = 0;         // of the unread part of buffer_
  size_t line_number_ = 0;
  bool end_of_file_ = false;
};

}  // namespace kvrt::cli
