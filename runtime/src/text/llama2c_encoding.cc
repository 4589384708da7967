#include "text/llama2c_encoding.h"

#include <algorithm>
#include <cstdio>

namespace kvrt::llama2c {
namespace {

std::optional<uint8_t> HexDigit(char c) {
  if (c >= '0' && c <= '9') return static_cast<uint8_t>(c - '0');
  if (c >= 'A' && c <= 'F') return static_cast<uint8_t>(c - 'A' + 10);
  if (c >= 'a' && c <= 'f') return static_cast<uint8_t>(c - 'a' + 10);
  return std::nullopt;
}

bool IsContinuationByte(char c) { return (static_cast<uint8_t>(c) & 0xC0) == 0x80; }

// run.c starts best_score at -1e10 and merges only strictly better pairs.
constexpr float kNoMergeScore = -1e10f;

}  // namespace

std::optional<uint8_t> RawByte(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return std::nullopt;
  const std::optional<uint8_t> high = HexDigit(piece[3]), low = HexDigit(piece[4]);
  if (!high || !low) return std::nullopt;
  return static_cast<uint8_t>(*high * 16 + *low);
}

std::string RawBytePiece(uint8_t byte) {
  char text[8];
  std::snprintf(text, sizeof text, "<0x%02X>", byte);
  return text;
}

std::vector<uint32_t> SortPieceIds(std::span<const std::string> pieces) {
  std::vector<uint32_t> ids(pieces.size());
  for (size_t id = 0; id < pieces.size(); ++id) ids[id] = static_cast<uint32_t>(id);
  // Stable: equal pieces keep ascending ids, so FindPiece returns the lowest.
  std::stable_sort(ids.begin(), ids.end(),
                   [&](uint32_t a, uint32_t b) { return pieces[a] < pieces[b]; });
  return ids;
}

std::optional<uint32_t> FindPiece(std::span<const std::string> pieces,
                                  std::span<const uint32_t> sorted_ids, std::string_view text) {
  const auto it = std::lower_bound(
      sorted_ids.begin(), sorted_ids.end(), text,
      [&](uint32_t id, std::string_view key) { return std::string_view(pieces[id]) < key; });
  if (it == sorted_ids.end() || pieces[*it] != text) return std::nullopt;
  return *it;
}

std::vector<uint32_t> Encode(std::span<const std::string> pieces, std::span<const float> scores,
                             std::span<const uint32_t> sorted_ids, std::string_view text) {
  std::vector<uint32_t> tokens;
  tokens.reserve(text.size() + 1);
  auto append_code_point = [&](std::string_view code_point) {
    if (const std::optional<uint32_t> id = FindPiece(pieces, sorted_ids, code_point)) {
      tokens.push_back(*id);
      return;
    }
    for (const char byte : code_point) tokens.push_back(static_cast<uint8_t>(byte) + kFirstByteId);
  };
  // sentencepiece's add_dummy_prefix, which run.c applies to non-empty text.
  if (!text.empty()) append_code_point(" ");
  // A code point is a leading (or ASCII) byte plus the continuation bytes that
  // follow, at most 4 bytes; run.c also emits a stray continuation byte alone.
  for (size_t start = 0; start < text.size();) {
    size_t end = start + 1;
    while (end < text.size() && IsContinuationByte(text[end]) && end - start < 4) ++end;
    append_code_point(text.substr(start, end - start));
    start = end;
  }

  // merged[i]: the id the pair (tokens[i], tokens[i+1]) merges into, if any. Only
  // the two pairs around a merge change, so each round rescans ids, not strings.
  auto merge_of = [&](size_t i) -> std::optional<uint32_t> {
    std::string joined = pieces[tokens[i]];
    joined += pieces[tokens[i + 1]];
    return FindPiece(pieces, sorted_ids, joined);
  };
  std::vector<std::optional<uint32_t>> merged;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) merged.push_back(merge_of(i));
  while (true) {
    float best_score = kNoMergeScore;
    std::optional<size_t> best;
    for (size_t i = 0; i < merged.size(); ++i) {
      if (merged[i] && scores[*merged[i]] > best_score) {
        best_score = scores[*merged[i]];
        best = i;
      }
    }
    if (!best) break;
    const size_t at = *best;
    tokens[at] = *merged[at];
    tokens.erase(tokens.begin() + static_cast<std::ptrdiff_t>(at) + 1);
    merged.erase(merged.begin() + static_cast<std::ptrdiff_t>(at));
    if (at > 0) merged[at - 1] = merge_of(at - 1);
    if (at + 1 < tokens.size()) merged[at] = merge_of(at);
  }
  return tokens;
}

}  // namespace kvrt::llama2c
