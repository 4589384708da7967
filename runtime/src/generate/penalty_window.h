// The tokens the repetition, frequency and presence penalties look at: the last
// N tokens of a sequence (every token when N is -1), kept as a count per id and
// the list of ids counted at least once, so that applying the penalties costs the
// number of distinct ids, not N, and pushing a token costs O(1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/buffer.h"
#include "kvrt/error.h"

namespace kvrt {

class PenaltyWindow {
 public:
  // `last_n` > 0, or -1 for every token. A sequence never holds more than
  // `longest_sequence` tokens, which bounds the ring of a long window.
  // AllocationFailed.
  static Result<PenaltyWindow> Create(size_t vocabulary_size, int64_t last_n,
                                      size_t longest_sequence);

  // `token` < the vocabulary size. The oldest token leaves a full window.
  void Push(uint32_t token);
  void Clear();
  // Clear, then a window of `last_n` over sequences of at most
  // `longest_sequence` tokens, within the ring this window already has (a
  // request driver reuses one window per slot); false, changing nothing, when
  // that ring is too short.
  bool Reset(int64_t last_n, size_t longest_sequence);

  // The ids with a count of at least one, in no particular order.
  std::span<const uint32_t> counted() const { return {counted_.data(), counted_size_}; }
  uint64_t count(uint32_t token) const { return counts_[token]; }

 private:
  PenaltyWindow() = default;
  void Add(uint32_t token);
  void Remove(uint32_t token);

  Buffer<uint64_t> counts_;   // [vocabulary] occurrences in the window
  Buffer<uint32_t> slot_of_;  // [vocabulary] the id's index in counted_ while counted
  Buffer<uint32_t> counted_;  // [vocabulary] the counted ids, first counted_size_ valid
  size_t counted_size_ = 0;
  Buffer<uint32_t> ring_;     // [≥ ring_length_] the window's tokens, oldest at ring_start_
  size_t ring_length_ = 0;    // tokens the window holds; 0: every token (nothing leaves)
  size_t ring_start_ = 0, ring_size_ = 0;
};

}  // namespace kvrt
