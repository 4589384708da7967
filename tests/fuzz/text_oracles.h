// Independent re-implementations of two text rules, as oracles for the
// tokenizer fuzzer: they follow the spec text, not the runtime's code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace kvrt::fuzz {

// spec/checkpoint.md §11.3: bytes to content ids (b + 2), then one left-to-right
// pass per merge rank in rank order, each position consumed at most once.
inline std::vector<uint32_t> NaiveBpeEncode(
    std::string_view text, const std::vector<std::pair<uint32_t, uint32_t>>& merges) {
  std::vector<uint32_t> ids;
  for (unsigned char byte : text) ids.push_back(uint32_t{byte} + 2);
  std::vector<uint32_t> next;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const uint32_t left = merges[rank].first + 2, right = merges[rank].second + 2;
    next.clear();
    for (size_t i = 0; i < ids.size();) {
      if (i + 1 < ids.size() && ids[i] == left && ids[i + 1] == right) {
        next.push_back(static_cast<uint32_t>(258 + rank));
        i += 2;
      } else {
        next.push_back(ids[i]);
        i += 1;
      }
    }
    ids.swap(next);
  }
  return ids;
}

// Rust's core::str::from_utf8 (run_utf8_validation): {valid_up_to, error_len},
// error_len empty when the input ends inside a character; nullopt when valid.
struct Utf8Verdict {
  size_t valid_up_to = 0;
  std::optional<size_t> error_len;
};

inline std::optional<Utf8Verdict> RustUtf8Check(std::string_view text) {
  const size_t n = text.size();
  auto at = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  auto continuation = [](unsigned char c) { return c >= 0x80 && c <= 0xBF; };
  for (size_t i = 0; i < n;) {
    const unsigned char first = at(i);
    if (first < 0x80) {
      ++i;
      continue;
    }
    size_t width = 0;
    if (first >= 0xC2 && first <= 0xDF) width = 2;
    if (first >= 0xE0 && first <= 0xEF) width = 3;
    if (first >= 0xF0 && first <= 0xF4) width = 4;
    if (width == 0) return Utf8Verdict{i, 1};
    if (i + 1 >= n) return Utf8Verdict{i, std::nullopt};
    const unsigned char second = at(i + 1);
    bool second_ok = continuation(second);
    if (first == 0xE0) second_ok = second >= 0xA0 && second <= 0xBF;
    if (first == 0xED) second_ok = second >= 0x80 && second <= 0x9F;
    if (first == 0xF0) second_ok = second >= 0x90 && second <= 0xBF;
    if (first == 0xF4) second_ok = second >= 0x80 && second <= 0x8F;
    if (!second_ok) return Utf8Verdict{i, 1};
    for (size_t k = 2; k < width; ++k) {
      if (i + k >= n) return Utf8Verdict{i, std::nullopt};
      if (!continuation(at(i + k))) return Utf8Verdict{i, k};
    }
    i += width;
  }
  return std::nullopt;
}

}  // namespace kvrt::fuzz
