#include "tokenizer/llama2c_encoding.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

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

  // run.c rescans every adjacent pair after each merge (quadratic: a 100 KB
  // prompt took seconds). The same merges in the same order, in O(n log n): the
  // tokens form a linked list (a merge keeps the left node and unlinks the
  // right one, so node order is text order) and a heap holds every mergeable
  // pair by (score descending, left node ascending) — the highest score, the
  // leftmost on ties, as run.c picks it. An entry whose nodes changed since it
  // was pushed is stale and skipped.
  const size_t n = tokens.size();
  if (n < 2) return tokens;
  constexpr size_t kNone = SIZE_MAX;
  std::vector<size_t> next(n), previous(n);
  std::vector<uint32_t> version(n, 0);
  for (size_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? i + 1 : kNone;
    previous[i] = i == 0 ? kNone : i - 1;
  }
  struct Candidate {
    float score;
    size_t left, right;
    uint32_t left_version, right_version;
    uint32_t merged;
  };
  // std::priority_queue pops the largest: "less" is a lower score, or on equal
  // scores the pair further right.
  auto less = [](const Candidate& a, const Candidate& b) {
    if (a.score != b.score) return a.score < b.score;
    return a.left > b.left;
  };
  std::vector<Candidate> heap;
  std::string joined;
  auto push_pair = [&](size_t left) {
    const size_t right = next[left];
    if (right == kNone) return;
    joined.assign(pieces[tokens[left]]);
    joined += pieces[tokens[right]];
    const std::optional<uint32_t> id = FindPiece(pieces, sorted_ids, joined);
    // Only strictly better than run.c's initial best merges (NaN never does).
    if (!id || !(scores[*id] > kNoMergeScore)) return;
    heap.push_back({scores[*id], left, right, version[left], version[right], *id});
    std::push_heap(heap.begin(), heap.end(), less);
  };
  for (size_t i = 0; i + 1 < n; ++i) push_pair(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), less);
    const Candidate best = heap.back();
    heap.pop_back();
    if (next[best.left] != best.right || version[best.left] != best.left_version ||
        version[best.right] != best.right_version) {
      continue;  // stale: one of its tokens merged since
    }
    tokens[best.left] = best.merged;
    ++version[best.left];
    const size_t after = next[best.right];
    next[best.left] = after;
    if (after != kNone) previous[after] = best.left;
    next[best.right] = kNone;
    ++version[best.right];
    if (previous[best.left] != kNone) push_pair(previous[best.left]);
    push_pair(best.left);
  }
  std::vector<uint32_t> merged_tokens;
  merged_tokens.reserve(n);
  for (size_t i = 0; i != kNone; i = next[i]) merged_tokens.push_back(tokens[i]);
  tokens = std::move(merged_tokens);
  return tokens;
}

}  // namespace kvrt::llama2c
