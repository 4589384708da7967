#include "text/vocabulary_for_test.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_support.h"

namespace kvrt::testing {
namespace {

// GGUF stores "no such token" as u32 -1.
std::optional<uint32_t> SpecialId(const nlohmann::json& json, const char* key) {
  if (!json.contains(key)) return std::nullopt;
  const uint64_t id = json[key].get<uint64_t>();
  if (id == UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(id);
}

std::optional<bool> Flag(const nlohmann::json& json, const char* key) {
  if (!json.contains(key)) return std::nullopt;
  return json[key].get<bool>();
}

}  // namespace

std::string VocabularyJsonPath(const std::string& gguf_path) {
  const char* dir = std::getenv("KVRT_VOCAB_JSON_DIR");
  const std::string base = dir != nullptr && *dir != '\0' ? dir : KVRT_VOCAB_JSON_DIR;
  return base + "/" + std::filesystem::path(gguf_path).filename().string() + ".json";
}

std::optional<VocabularyData> LoadVocabularyForTest(const std::string& gguf_path) {
  std::ifstream in(VocabularyJsonPath(gguf_path), std::ios::binary);
  if (!in) return std::nullopt;
  const nlohmann::json json = nlohmann::json::parse(in);  // a broken dump fails the test
  VocabularyData data;
  data.model = json.value("model", "");
  data.pre = json.value("pre", "");
  data.tokens = json.at("tokens").get<std::vector<std::string>>();
  if (json.contains("scores")) data.scores = json["scores"].get<std::vector<float>>();
  if (json.contains("token_type"))
    data.token_types = json["token_type"].get<std::vector<int32_t>>();
  if (json.contains("merges")) data.merges = json["merges"].get<std::vector<std::string>>();
  data.bos = SpecialId(json, "bos_token_id");
  data.eos = SpecialId(json, "eos_token_id");
  data.unk = SpecialId(json, "unknown_token_id");
  data.pad = SpecialId(json, "padding_token_id");
  data.add_bos = Flag(json, "add_bos_token");
  data.add_eos = Flag(json, "add_eos_token");
  data.add_space_prefix = Flag(json, "add_space_prefix");
  return data;
}

std::vector<TokenizationCase> ReadTokenizationCases(const std::string& gguf_path) {
  constexpr std::string_view kSeparator = "\n__ggml_vocab_test__\n";
  const std::string inputs = ReadText(gguf_path + ".inp");
  std::vector<TokenizationCase> cases;
  for (size_t begin = 0; begin < inputs.size();) {
    const size_t end = inputs.find(kSeparator, begin);
    if (end == std::string::npos) break;  // nothing follows the last separator
    cases.push_back({inputs.substr(begin, end - begin), {}});
    begin = end + kSeparator.size();
  }
  const std::vector<std::string> lines = Lines(ReadText(gguf_path + ".out"));
  if (lines.size() != cases.size()) return {};  // the tests check the count
  for (size_t i = 0; i < cases.size(); ++i) {
    std::istringstream ids(lines[i]);
    for (uint32_t id = 0; ids >> id;) cases[i].ids.push_back(id);
  }
  return cases;
}

}  // namespace kvrt::testing
