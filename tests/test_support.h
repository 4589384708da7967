// Helpers shared by the test suites: fixture paths, file reading and bit-pattern
// parsing. Tests read fixtures only from this project's fixtures/ folder.
#pragma once

#include <unistd.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "sanitizer_build.h"

namespace kvrt::testing {

// Sampling under sanitizers: see sanitizer_build.h.
using sanitizer_build::CaseRunsInThisBuild;
using sanitizer_build::kSanitizerCaseStride;

inline std::string FixturePath(const std::string& relative) {
  return std::string(KVRT_FIXTURES_DIR) + "/" + relative;
}

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A file in a per-process scratch directory, removed with the directory.
class ScratchDir {
 public:
  ScratchDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("kvrt_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline double DoubleFromBits(uint64_t bits) { return std::bit_cast<double>(bits); }
inline uint64_t BitsOf(double x) { return std::bit_cast<uint64_t>(x); }

// "0x3ffc4b42fea302b1" or "3ffc4b42fea302b1" -> the double with those bits.
inline double DoubleFromHex(const std::string& hex) {
  return DoubleFromBits(std::strtoull(hex.c_str(), nullptr, 16));
}

// All numbers in a "[a, b, c]" list (decimal or 0x-hex bit patterns).
inline std::vector<double> ParseList(const std::string& text) {
  std::vector<double> out;
  const size_t open = text.rfind('['), close = text.rfind(']');
  std::string inner = text.substr(open + 1, close - open - 1);
  std::istringstream in(inner);
  for (std::string item; std::getline(in, item, ',');) {
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    if (item.empty()) continue;
    if (item.rfind("0x", 0) == 0) {
      out.push_back(DoubleFromHex(item));
    } else {
      out.push_back(std::strtod(item.c_str(), nullptr));
    }
  }
  return out;
}

}  // namespace kvrt::testing
