#include "json_file.h"

#include "input_file.h"

namespace kvrt::cli {

Result<nlohmann::json> ReadJsonFile(const std::string& path, const std::string& what, uint64_t max_bytes) {
  // Every way the file cannot be read is one Io error "could not read <what> <path>: <why>".
  auto unreadable = [&](const std::string& why) {
    return std::unexpected(Error(ErrorCode::kIo, {{"operation", std::string("read")}, {"path", path}},
                                 "could not read " + what + " " + path + ": " + why));
  };
  Result<InputFile> file = InputFile::Open(path, what);
  if (!file) {
    return unreadable(file.error().code() == ErrorCode::kNotRegularFile ? "not a regular file"
                                                                         : file.error().message());
  }
  if (file->size() > max_bytes) {
    return unreadable(std::to_string(file->size()) + " bytes is over the limit of " + std::to_string(max_bytes) +
                      " bytes");
  }
  Result<std::string> text = ReadInputFile(*file, what, max_bytes);
  if (!text) return unreadable(text.error().message());
  nlohmann::json json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return std::unexpected(Error(ErrorCode::kInvalidArgument, {{"", path}}, path + " is not valid JSON (" + what + ")"));
  }
  return json;
}

}  // namespace kvrt::cli
