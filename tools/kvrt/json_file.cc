#include "json_file.h"

#include "input_file.h"

namespace kvrt::cli {

Result<nlohmann::json> ReadJsonFile(const std::string& path, const std::string& what, uint64_t max_bytes) {
  std::expected<std::string, FileProblem> text = ReadRegularFile(path, max_bytes);
  if (!text) {
    const FileProblem& problem = text.error();
    std::string reason = problem.detail;
    if (problem.kind == FileProblem::Kind::kNotRegular) reason = "not a regular file";
    if (problem.kind == FileProblem::Kind::kTooLarge) {
      reason = problem.detail + " bytes is over the limit of " + std::to_string(max_bytes) + " bytes";
    }
    return std::unexpected(Error(ErrorCode::kIo, {{"operation", std::string("read")}, {"path", path}},
                                 "could not read " + what + " " + path + ": " + reason));
  }
  nlohmann::json json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return std::unexpected(Error(ErrorCode::kInvalidArgument, {{"", path}}, path + " is not valid JSON (" + what + ")"));
  }
  return json;
}

}  // namespace kvrt::cli
