// Helpers of the llama2.c tests: scratch files, raw headers, and the fixture that
// llama2.c's run.c produced (fixtures/llama2c/README.md).
#pragma once

#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kvrt/config.h"
#include "formats/llama2c/llama2c.h"
#include "test_support.h"

namespace kvrt::testing {

inline void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline void AppendI32(std::vector<uint8_t>& out, int32_t value) {
  uint8_t bytes[4];
  std::memcpy(bytes, &value, 4);  // the test machines are little-endian, like the format
  out.insert(out.end(), bytes, bytes + 4);
}

inline void AppendF32(std::vector<uint8_t>& out, float value) {
  uint8_t bytes[4];
  std::memcpy(bytes, &value, 4);
  out.insert(out.end(), bytes, bytes + 4);
}

inline std::vector<uint8_t> HeaderBytes(const Llama2cHeader& h) {
  std::vector<uint8_t> out;
  for (int32_t field : {h.dim, h.hidden_dim, h.n_layers, h.n_heads, h.n_kv_heads, h.vocab_size, h.seq_len}) {
    AppendI32(out, field);
  }
  return out;
}

// A small llama2.c-compatible configuration.
inline ModelConfig SmallConfig(size_t kv_heads, bool tied) {
  ModelConfig config = ModelConfig::Create(300, 16, 4, 24, 2, 12, 10000.0, 1e-5);
  config.kv_heads = kv_heads;
  config.tied_output = tied;
  return config;
}

// The run.c run recorded in fixtures/llama2c.
struct RunCRecord {
  std::vector<uint32_t> tokens;     // BOS, prompt, generated
  std::vector<float> logits;        // positions × vocabulary
  static constexpr size_t kVocabulary = 512;
  static constexpr size_t kPromptTokens = 22;  // BOS + 21
  static constexpr const char* kPrompt = "Once upon a time, na\xC3\xAFve";
  std::string model_path = FixturePath("llama2c/gqa_untied.bin");
  std::string tokenizer_path = FixturePath("llama2c/tokenizer.bin");

  static RunCRecord Load() {
    RunCRecord record;
    std::istringstream in(ReadText(FixturePath("llama2c/runc_tokens.txt")));
    for (std::string id; std::getline(in, id, ',');) record.tokens.push_back(static_cast<uint32_t>(std::stoul(id)));
    const std::vector<uint8_t> bytes = ReadBytes(FixturePath("llama2c/runc_logits.f32"));
    record.logits.resize(bytes.size() / sizeof(float));
    std::memcpy(record.logits.data(), bytes.data(), record.logits.size() * sizeof(float));
    return record;
  }
  size_t positions() const { return logits.size() / kVocabulary; }
  const float* row(size_t position) const { return logits.data() + position * kVocabulary; }
};

}  // namespace kvrt::testing
