#include "generate/penalty_window.h"

#include <algorithm>
#include <string>

namespace kvrt {

namespace {

// The tokens a ring must hold for a window of `last_n` over sequences of at most
// `longest_sequence` tokens; 0 when the window is unbounded (-1, or a window
// longer than any sequence, which never drops a token).
size_t RingLength(int64_t last_n, size_t longest_sequence) {
  if (last_n <= 0) return 0;
  const size_t ring = std::min<uint64_t>(static_cast<uint64_t>(last_n), longest_sequence);
  return ring >= longest_sequence ? 0 : ring;
}

}  // namespace

Result<PenaltyWindow> PenaltyWindow::Create(size_t vocabulary_size, int64_t last_n,
                                            size_t longest_sequence) {
  PenaltyWindow window;
  const size_t ring = RingLength(last_n, longest_sequence);
  std::optional<Buffer<uint64_t>> counts = Buffer<uint64_t>::Allocate(vocabulary_size);
  std::optional<Buffer<uint32_t>> slot_of = Buffer<uint32_t>::Allocate(vocabulary_size);
  std::optional<Buffer<uint32_t>> counted = Buffer<uint32_t>::Allocate(vocabulary_size);
  std::optional<Buffer<uint32_t>> tokens = Buffer<uint32_t>::Allocate(ring);
  if (!counts || !slot_of || !counted || !tokens) {
    return Fail(ErrorCode::kAllocationFailed, {{"values", uint64_t{vocabulary_size}}},
                "could not allocate the penalty window for " + std::to_string(vocabulary_size) +
                    " token ids");
  }
  window.counts_ = std::move(*counts);
  window.slot_of_ = std::move(*slot_of);
  window.counted_ = std::move(*counted);
  window.ring_ = std::move(*tokens);
  window.ring_length_ = ring;
  return window;
}

bool PenaltyWindow::Reset(int64_t last_n, size_t longest_sequence) {
  const size_t ring = RingLength(last_n, longest_sequence);
  if (ring > ring_.size()) return false;
  Clear();
  ring_length_ = ring;
  return true;
}

void PenaltyWindow::Add(uint32_t token) {
  if (counts_[token]++ == 0) {
    slot_of_[token] = static_cast<uint32_t>(counted_size_);
    counted_[counted_size_++] = token;
  }
}

void PenaltyWindow::Remove(uint32_t token) {
  if (--counts_[token] == 0) {
    const uint32_t slot = slot_of_[token];
    const uint32_t moved = counted_[--counted_size_];
    counted_[slot] = moved;
    slot_of_[moved] = slot;
  }
}

void PenaltyWindow::Push(uint32_t token) {
  Add(token);
  if (ring_length_ == 0) return;
  if (ring_size_ == ring_length_) {
    Remove(ring_[ring_start_]);
    ring_[ring_start_] = token;
    ring_start_ = (ring_start_ + 1) % ring_length_;
  } else {
    ring_[(ring_start_ + ring_size_) % ring_length_] = token;
    ++ring_size_;
  }
}

void PenaltyWindow::Clear() {
  for (size_t i = 0; i < counted_size_; ++i) counts_[counted_[i]] = 0;
  counted_size_ = 0;
  ring_start_ = ring_size_ = 0;
}

}  // namespace kvrt
