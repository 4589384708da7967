// Standard output of the kvrt commands, with every write checked. A command whose
// output does not arrive (a full disk, /dev/full, a closed descriptor) must not
// exit 0: `kvrt logits --json > /dev/full` used to. Every command writes through
// these functions, which remember the first failure and its errno; streaming
// commands check each write with WriteStdout and stop at the first failure, and
// main() flushes and closes stdout after every command (FinishStdout), which
// reports any failure the command did not.
// A closed pipe still ends the process with SIGPIPE (status 141), as for other
// Unix tools, unless the caller ignores the signal: then the write fails with
// EPIPE and is reported like any other.
#pragma once

#include <string_view>

#include "kvrt/error.h"

namespace kvrt::cli {

// Io{operation: "write", path: "standard output", os_error}.
Error StdoutError(int os_error);

// Writes `text` to stdout: Io when stdio reports a failure now or earlier.
Result<void> WriteStdout(std::string_view text);
// printf to stdout for the commands' plain output. A failure is remembered with
// its errno, for the error FinishStdout prints (stdio's own flag keeps no reason).
void PrintStdout(const char* format, ...) __attribute__((format(printf, 1, 2)));
// fflush(stdout): Io when it or any earlier write failed.
Result<void> FlushStdout();

// After the command that returned `status`: flushes and closes stdout and
// returns `status`, or prints the one `error: Io: ...` line and returns the
// error status when the output did not arrive and nothing else was reported.
int FinishStdout(int status);

}  // namespace kvrt::cli
