#include "input_file.h"

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <system_error>

#include "flags.h"

namespace kvrt::cli {
namespace {

const char* KindName(std::filesystem::file_type type) {
  switch (type) {
    case std::filesystem::file_type::directory: return "a directory";
    case std::filesystem::file_type::fifo: return "a FIFO";
    case std::filesystem::file_type::character: return "a character device";
    case std::filesystem::file_type::block: return "a block device";
    case std::filesystem::file_type::socket: return "a socket";
    default: return "not a regular file";
  }
}

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

std::unexpected<FileProblem> Problem(FileProblem::Kind kind, std::string detail) {
  return std::unexpected(FileProblem{kind, std::move(detail)});
}

}  // namespace

std::expected<std::string, FileProblem> ReadRegularFile(const std::string& path, uint64_t max_bytes) {
  using Kind = FileProblem::Kind;
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (error) return Problem(Kind::kExamine, error.message());
  if (!std::filesystem::is_regular_file(status)) return Problem(Kind::kNotRegular, KindName(status.type()));
  const uint64_t size = std::filesystem::file_size(path, error);
  if (error) return Problem(Kind::kExamine, error.message());
  if (size > max_bytes) return Problem(Kind::kTooLarge, std::to_string(size));
  const std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) return Problem(Kind::kOpen, std::error_code(errno, std::generic_category()).message());
  // Room for one byte beyond the size seen: a file that grew since is refused
  // rather than read without bound.
  std::string bytes(size + 1, '\0');
  const size_t read = std::fread(bytes.data(), 1, bytes.size(), file.get());
  if (std::ferror(file.get())) return Problem(Kind::kRead, "read failed");
  if (read > size) return Problem(Kind::kGrew, "the file grew while it was read");
  bytes.resize(read);
  return bytes;
}

Result<std::string> ReadInputFile(const std::string& path, const std::string& what, uint64_t max_bytes) {
  std::expected<std::string, FileProblem> bytes = ReadRegularFile(path, max_bytes);
  if (bytes) return std::move(*bytes);
  const FileProblem& problem = bytes.error();
  switch (problem.kind) {
    case FileProblem::Kind::kNotRegular:
      return std::unexpected(Error(ErrorCode::kNotRegularFile, {{"path", path}, {"kind", problem.detail}},
                                   path + " is " + problem.detail + ", not " + what));
    case FileProblem::Kind::kTooLarge:
      return std::unexpected(InvalidArgument(path + " has " + problem.detail + " bytes, more than the " +
                                             std::to_string(max_bytes) + " " + what + " may have"));
    default:
      return std::unexpected(Error(ErrorCode::kIo, {{"operation", std::string("read")}, {"path", path}},
                                   "could not read " + what + " " + path + ": " + problem.detail));
  }
}

Result<std::string> ReadStandardInput(const std::string& what, uint64_t max_bytes) {
  std::string bytes;
  char chunk[1 << 16];
  for (;;) {
    const size_t read = std::fread(chunk, 1, sizeof chunk, stdin);
    if (bytes.size() + read > max_bytes) {
      return std::unexpected(InvalidArgument("standard input holds more than the " +
                                             std::to_string(max_bytes) + " bytes " + what + " may have"));
    }
    bytes.append(chunk, read);
    if (read < sizeof chunk) break;
  }
  if (std::ferror(stdin)) {
    return std::unexpected(Error(ErrorCode::kIo, {{"operation", std::string("read")}, {"path", std::string("-")}},
                                 "could not read " + what + " from standard input"));
  }
  return bytes;
}

}  // namespace kvrt::cli
