// Helpers shared by the checkpoint and tokenizer tests: fixture lists, the
// `key=value` summary files of fixtures/checkpoints, hex and Rust-lossy text.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/llmcp35/checkpoint.h"
#include "kvrt/tokenizer.h"
#include "test_support.h"

namespace kvrt::testing {

// The six reference samples of fixtures/checkpoints (without extension).
inline const std::vector<std::string>& SampleCheckpointNames() {
  static const std::vector<std::string> names = {
      "ch38_loaded",
      "ch39_trained",
      "variant_literal_binary_step0",
      "variant_bpe0_groups_step0",
      "variant_bpe16_2layer_groups",
      "variant_literal_11layer",
  };
  return names;
}

// The golden cases of fixtures/golden (each has <case>.ckpt and <case>.json).
inline const std::vector<std::string>& GoldenCaseNames() {
  static const std::vector<std::string> names = {
      "p01_tiny_fixture", "p02_tiny_v16_dh8", "p03_tiny_v11_dh6", "p04_dh6",
      "p05_dh10",         "p06_dh14",         "p07_dh18",         "p08_medium_v300",
      "p09_medium_v512",  "p10_h8_dh8_l4",
  };
  return names;
}

// Every valid checkpoint file in fixtures/, relative to the fixtures folder.
inline std::vector<std::string> AllValidCheckpointFiles() {
  std::vector<std::string> files;
  for (const std::string& name : SampleCheckpointNames())
    files.push_back("checkpoints/" + name + ".ckpt");
  for (const std::string& name : GoldenCaseNames()) files.push_back("golden/" + name + ".ckpt");
  files.push_back("demo/demo.ckpt");
  files.push_back("corrupt/35_ACCEPTED_selected_and_optimizer_step_9.ckpt");
  files.push_back("corrupt/51_ACCEPTED_bpe_rank7_becomes_256_257.ckpt");
  return files;
}

inline std::string HexOf(std::string_view bytes) {
  std::string out;
  char digits[4];
  for (const char c : bytes) {
    std::snprintf(digits, sizeof digits, "%02x", static_cast<unsigned>(static_cast<uint8_t>(c)));
    out += digits;
  }
  return out;
}

inline std::string BytesFromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  }
  return out;
}

// Rust's String::from_utf8_lossy: each maximal invalid sequence becomes U+FFFD.
inline std::string LossyUtf8(std::string_view bytes) {
  std::string out;
  while (!bytes.empty()) {
    const std::optional<Utf8Error> bad = ValidateUtf8(bytes);
    if (!bad) {
      out += bytes;
      break;
    }
    out += bytes.substr(0, bad->valid_up_to);
    out += "\xEF\xBF\xBD";
    const size_t skip = bad->error_len ? *bad->error_len : bytes.size() - bad->valid_up_to;
    bytes.remove_prefix(bad->valid_up_to + skip);
  }
  return out;
}

// A `key=value` file; keys with an index ("record[3]") are kept verbatim.
class SummaryFile {
 public:
  explicit SummaryFile(const std::string& path) {
    for (const std::string& line : Lines(ReadText(path))) {
      if (line.rfind("---", 0) == 0) break;  // generation evidence follows
      const size_t equals = line.find('=');
      if (equals == std::string::npos) continue;
      values_[line.substr(0, equals)] = line.substr(equals + 1);
    }
  }

  bool Has(const std::string& key) const { return values_.contains(key); }
  const std::string& Get(const std::string& key) const {
    static const std::string missing = "<missing>";
    const auto found = values_.find(key);
    return found == values_.end() ? missing : found->second;
  }
  uint64_t U64(const std::string& key) const { return std::stoull(Get(key), nullptr, 0); }
  size_t size() const { return values_.size(); }

 private:
  std::map<std::string, std::string> values_;
};

// The value after `name:` in a space-separated `name:value` list.
inline std::string Attribute(const std::string& text, const std::string& name) {
  size_t at = 0;
  while (true) {
    at = text.find(name + ":", at);
    if (at == std::string::npos) return "<missing " + name + ">";
    if (at == 0 || text[at - 1] == ' ') break;
    ++at;
  }
  const size_t begin = at + name.size() + 1;
  if (text[begin] == '"') return text.substr(begin, text.find('"', begin + 1) - begin + 1);
  if (text[begin] == '[' || text[begin] == '(') {
    const char close = text[begin] == '[' ? ']' : ')';
    return text.substr(begin, text.find(close, begin) - begin + 1);
  }
  const size_t end = text.find(' ', begin);
  return text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// The bit pattern in "... (bits 0x3ff0000000000000)" right after `name:`.
inline uint64_t AttributeBits(const std::string& text, const std::string& name) {
  const size_t at = text.find(name + ":");
  const size_t bits = text.find("(bits 0x", at);
  return std::stoull(text.substr(bits + 8, 16), nullptr, 16);
}

// ["a", "b"] -> {a, b} (names contain no quotes or commas).
inline std::vector<std::string> QuotedList(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while ((at = text.find('"', at)) != std::string::npos) {
    const size_t end = text.find('"', at + 1);
    out.push_back(text.substr(at + 1, end - at - 1));
    at = end + 1;
  }
  return out;
}

}  // namespace kvrt::testing
