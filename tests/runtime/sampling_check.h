// Parsing fixtures/sampling/sampling_check.txt (layout in spec/sampling.md §7).
// Floats are written 0x<bits>(<decimal>); the bits are authoritative.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kvrt/sampling.h"
#include "test_support.h"

namespace kvrt::testing {

// "0x3fe0000000000000(0.5)" -> 0.5 by bits.
inline double CheckFloat(const std::string& text) {
  return DoubleFromHex(text.substr(0, text.find('(')));
}

inline std::vector<double> CheckFloatList(const std::string& text) {
  std::vector<double> out;
  const std::string inner = text.substr(text.find('[') + 1, text.rfind(']') - text.find('[') - 1);
  std::istringstream in(inner);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(CheckFloat(item));
  }
  return out;
}

inline std::vector<uint32_t> IdList(const std::string& text) {
  std::vector<uint32_t> out;
  const std::string inner = text.substr(text.find('[') + 1, text.rfind(']') - text.find('[') - 1);
  std::istringstream in(inner);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(static_cast<uint32_t>(std::stoul(item)));
  }
  return out;
}

// The key=value tokens of one line (values without spaces).
inline std::map<std::string, std::string> Fields(const std::string& line) {
  std::map<std::string, std::string> fields;
  std::istringstream in(line);
  for (std::string token; in >> token;) {
    const size_t eq = token.find('=');
    if (eq != std::string::npos) fields[token.substr(0, eq)] = token.substr(eq + 1);
  }
  return fields;
}

// "mode: greedy" or "mode: temperature=0x..(..) top_k=N" within a line.
inline SamplingMode ModeOf(const std::string& line) {
  if (line.find("greedy") != std::string::npos) return SamplingMode::Greedy();
  std::map<std::string, std::string> fields = Fields(line);
  return SamplingMode::TemperatureTopK(CheckFloat(fields["temperature"]),
                                       std::stoul(fields["top_k"]));
}

// "0x2a" (hexadecimal) or "36" (decimal), as the check file writes seeds and states.
inline uint64_t Hex(const std::string& text) { return std::stoull(text, nullptr, 0); }

inline std::vector<std::string> SamplingCheckLines() {
  return Lines(ReadText(FixturePath("sampling/sampling_check.txt")));
}

}  // namespace kvrt::testing
