// Reading a file a user names on the command line (a prompt, a requests file, a
// benchmark run, a gate file) with every failure as a value: a FIFO, device or
// directory is refused before it is opened (a FIFO would block the open, a
// device never end a read), and so is a file larger than its kind may be.
#pragma once

#include <cstdint>
#include <expected>
#include <string>

#include "kvrt/error.h"

namespace kvrt::cli {

// Why a file could not be read; each command words it in its own error.
struct FileProblem {
  enum class Kind { kExamine, kNotRegular, kTooLarge, kOpen, kRead, kGrew };
  Kind kind;
  std::string detail;  // the OS's reason, the kind of file ("a FIFO"), or the size
};

// The bytes of a regular file of at most `max_bytes`.
std::expected<std::string, FileProblem> ReadRegularFile(const std::string& path, uint64_t max_bytes);

// ReadRegularFile with the runtime's errors for input paths: NotRegularFile{path,
// kind} ("<path> is a FIFO, not <what>"), InvalidArgument past `max_bytes`, Io
// when the file cannot be examined, opened or read. `what`: "a requests file", ...
Result<std::string> ReadInputFile(const std::string& path, const std::string& what, uint64_t max_bytes);

// Everything on standard input up to its end: InvalidArgument past `max_bytes`,
// Io when it cannot be read. `what`: "a prompt", ...
Result<std::string> ReadStandardInput(const std::string& what, uint64_t max_bytes);

}  // namespace kvrt::cli
