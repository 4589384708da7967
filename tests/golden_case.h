// Reading the golden cases of fixtures/golden (schema llm-from-scratch-golden/1,
// described in fixtures/golden/FORMAT.md) with nlohmann::json.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kvrt/config.h"
#include "kvrt/generation.h"
#include "kvrt/sampling.h"
#include "test_support.h"

namespace kvrt::testing {

using Json = nlohmann::json;

// The public golden JSON files, sorted by name.
inline std::vector<std::string> GoldenCasePaths() {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(FixturePath("golden"))) {
    if (entry.path().extension() == ".json") paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

inline Json LoadJson(const std::string& path) { return Json::parse(ReadText(path)); }

// {"bits": "…"} → the double with those bits.
inline double F64(const Json& scalar) {
  return DoubleFromHex(scalar.at("bits").get<std::string>());
}

inline std::vector<double> F64Vector(const Json& vector) {
  std::vector<double> out;
  for (const Json& bits : vector.at("bits")) out.push_back(DoubleFromHex(bits.get<std::string>()));
  return out;
}

inline uint64_t State(const Json& state) {
  return std::stoull(state.get<std::string>(), nullptr, 16);
}

inline std::vector<uint32_t> Ids(const Json& ids) { return ids.get<std::vector<uint32_t>>(); }

inline ModelConfig GoldenConfig(const Json& config) {
  return ModelConfig::Create(config.at("vocabulary_size"), config.at("model_width"),
                             config.at("heads"), config.at("feed_forward_width"),
                             config.at("layers"), config.at("max_positions"),
                             F64(config.at("rope_base")), F64(config.at("rms_epsilon")));
}

inline GenerationConfig GoldenRequest(const Json& request) {
  GenerationConfig config;
  const Json& mode = request.at("mode");
  if (mode.at("kind") == "Greedy") {
    config.mode = SamplingMode::Greedy();
  } else {
    config.mode = SamplingMode::TemperatureTopK(F64(mode.at("temperature")), mode.at("top_k"));
  }
  if (!request.at("eos_token").is_null())
    config.eos_token = request.at("eos_token").get<uint32_t>();
  config.max_new_tokens = request.at("max_new_tokens");
  return config;
}

inline std::string GoldenStopName(const std::string& variant) {
  if (variant == "Eos") return "eos";
  if (variant == "TokenLimit") return "token-limit";
  return "context-limit";
}

}  // namespace kvrt::testing
