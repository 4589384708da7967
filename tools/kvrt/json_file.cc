#include "json_file.h"

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <system_error>

namespace kvrt::cli {
namespace {

Error IoError(const std::string& path, const std::string& what, const std::string& reason) {
  return Error(ErrorCode::kIo, {{"operation", std::string("read")}, {"path", path}},
               "could not read " + what + " " + path + ": " + reason);
}

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

}  // namespace

Result<nlohmann::json> ReadJsonFile(const std::string& path, const std::string& what, uint64_t max_bytes) {
  std::error_code status_error;
  const std::filesystem::file_status status = std::filesystem::status(path, status_error);
  if (status_error) return std::unexpected(IoError(path, what, status_error.message()));
  if (!std::filesystem::is_regular_file(status)) return std::unexpected(IoError(path, what, "not a regular file"));
  const uint64_t size = std::filesystem::file_size(path, status_error);
  if (status_error) return std::unexpected(IoError(path, what, status_error.message()));
  if (size > max_bytes) {
    return std::unexpected(IoError(path, what,
                                   std::to_string(size) + " bytes is over the limit of " +
                                       std::to_string(max_bytes) + " bytes"));
  }
  const std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) return std::unexpected(IoError(path, what, std::error_code(errno, std::generic_category()).message()));
  // Room for one byte beyond the size seen: a file that grew since is refused
  // rather than read without bound.
  std::string text(size + 1, '\0');
  const size_t read = std::fread(text.data(), 1, text.size(), file.get());
  if (std::ferror(file.get())) return std::unexpected(IoError(path, what, "read failed"));
  if (read > size) return std::unexpected(IoError(path, what, "the file grew while it was read"));
  text.resize(read);
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return std::unexpected(Error(ErrorCode::kInvalidArgument, {{"", path}}, path + " is not valid JSON (" + what + ")"));
  }
  return json;
}

}  // namespace kvrt::cli
