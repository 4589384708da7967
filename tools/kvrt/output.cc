#include "output.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <system_error>

#include "common.h"

namespace kvrt::cli {
namespace {

// The errno of the first failed stdout call seen here (0: none seen). stdio's
// error flag says that a write failed, not why, so the reason is kept when it
// is still known.
int first_error = 0;

Result<void> Failed(int os_error) {
  if (first_error == 0) first_error = os_error != 0 ? os_error : EIO;
  return std::unexpected(StdoutError(first_error));
}

}  // namespace

Error StdoutError(int os_error) {
  return Error(ErrorCode::kIo,
               {{"operation", std::string("write")}, {"path", std::string("standard output")},
                {"os_error", int64_t{os_error}}},
               "could not write standard output: " + std::error_code(os_error, std::generic_category()).message() +
                   " (os error " + std::to_string(os_error) + ")");
}

Result<void> WriteStdout(std::string_view text) {
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::ferror(stdout)) {
    return Failed(errno);
  }
  return {};
}

void PrintStdout(const char* format, ...) {
  std::va_list arguments;
  va_start(arguments, format);
  errno = 0;
  const int printed = std::vprintf(format, arguments);
  va_end(arguments);
  if (printed < 0 || std::ferror(stdout)) (void)Failed(errno);
}

Result<void> FlushStdout() {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) return Failed(errno);
  return {};
}

int FinishStdout(int status) {
  Result<void> flushed = FlushStdout();
  errno = 0;
  const bool closed = std::fclose(stdout) == 0;
  if (flushed && !closed) flushed = Failed(errno);
  if (!flushed && status == 0) return ReportError(flushed.error());
  return status;
}

}  // namespace kvrt::cli
