// The best-first pair merging both GGUF tokenizers run over a linked list of
// symbols: SentencePiece merges the highest-scoring pair whose concatenation is a
// token (tokenizer/sentencepiece.cc), byte-level BPE the lowest-ranked merge
// (tokenizer/byte_level_bpe.cc). Only how a pair is found and ordered differs; the
// list surgery and the stale-candidate rule are this one loop.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

namespace kvrt::tokenizer {

// A run of the input being merged; merged-away symbols keep length 0.
struct MergeSymbol {
  uint32_t begin = 0;   // byte offset in the text being merged
  uint32_t length = 0;  // 0 once merged into its left neighbour
  int64_t prev = -1;    // index of the neighbouring live symbols, -1 at the ends
  int64_t next = -1;
  uint32_t id = UINT32_MAX;  // the token this symbol spells, where the caller tracks it
};

// A candidate merge of two adjacent symbols, ordered by `priority` (the caller's
// comparator decides which end of it wins) and then by the leftmost pair.
template <class Priority>
struct MergeCandidate {
  Priority priority;
  int64_t left;
  int64_t right;
  uint32_t length;  // left.length + right.length when queued; stale once either grows
};

// One symbol per input unit (`lengths[i]` bytes each, in order), linked.
inline std::vector<MergeSymbol> LinkSymbols(const std::vector<uint32_t>& lengths) {
  std::vector<MergeSymbol> symbols(lengths.size());
  uint32_t offset = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    symbols[i] = {offset, lengths[i], int64_t(i) - 1,
                  i + 1 == lengths.size() ? -1 : int64_t(i) + 1, UINT32_MAX};
    offset += lengths[i];
  }
  return symbols;
}

// Merges pairs until none is left. `find(left, right)` returns the priority of
// merging symbols[left] and symbols[right] (std::nullopt: they never merge);
// `first(a, b)` is true when priority a merges before b; `merged(symbol, priority)`
// updates the surviving left symbol (after its length has grown), e.g. its id.
// Throws only std::bad_alloc (the queue).
template <class Priority, class Find, class First, class Merged>
void MergePairs(std::vector<MergeSymbol>& symbols, Find&& find, First&& first, Merged&& merged) {
  using Candidate = MergeCandidate<Priority>;
  const auto later = [&](const Candidate& a, const Candidate& b) {
    if (first(a.priority, b.priority)) return false;
    if (first(b.priority, a.priority)) return true;
    return a.left > b.left;  // equal priorities: the leftmost pair first
  };
  std::vector<Candidate> storage;
  storage.reserve(symbols.size());
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(later)> queue(later,
                                                                               std::move(storage));
  const auto try_add = [&](int64_t left, int64_t right) {
    if (left < 0 || right < 0) return;
    if (const auto priority = find(left, right)) {
      queue.push({*priority, left, right, symbols[left].length + symbols[right].length});
    }
  };
  for (size_t i = 1; i < symbols.size(); ++i) try_add(int64_t(i) - 1, int64_t(i));

  while (!queue.empty()) {
    const Candidate candidate = queue.top();
    queue.pop();
    MergeSymbol& left = symbols[candidate.left];
    MergeSymbol& right = symbols[candidate.right];
    // Symbols only grow, so an unchanged total length means both are as queued.
    if (left.length == 0 || right.length == 0 ||
        left.length + right.length != candidate.length) {
      continue;
    }
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = candidate.left;
    merged(left, candidate.priority);
    try_add(left.prev, candidate.left);
    try_add(candidate.left, left.next);
  }
}

}  // namespace kvrt::tokenizer
