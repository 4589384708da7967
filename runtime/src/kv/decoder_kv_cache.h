// The K/V cache of a whole decoder: one LayerKvCache per block and the state of
// every sequence slot (spec/kv-cache.md §3).
//
// A slot is Empty (len 0), Prompting (a prompt fed in chunks, not yet complete),
// or Active/Full. Every slot has its own length and work counters; the cache's
// totals are over all slots. What a cache holds changes only through a session
// (session/decoder_kv_session.h): the session validates every request and runs
// the two-phase commit, then calls the mutators below, which keep this class's
// invariants: every layer holds exactly each slot's committed rows, and the total
// work is the sum of the slots' work.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kvrt/engine_options.h"
#include "kvrt/error.h"
#include "kvrt/steps.h"
#include "kv/layer_kv_cache.h"
#include "model/decoder_model.h"

namespace kvrt {

class DecoderKvCache {
 public:
  // spec/kv-cache.md §3.1: one binding per parameter (node + revision), one layer
  // cache per block, the config by value; len 0, work zero.
  static Result<DecoderKvCache> Create(const DecoderModel& model, CacheOptions options = {});

  DecoderKvCache(DecoderKvCache&&) noexcept;
  DecoderKvCache& operator=(DecoderKvCache&&) noexcept;
  DecoderKvCache(const DecoderKvCache&) = delete;
  DecoderKvCache& operator=(const DecoderKvCache&) = delete;
  ~DecoderKvCache();
  // A deep copy of the whole state (not bound to any session).
  Result<DecoderKvCache> Clone() const;

  // The binding checks of spec §3.3, side-effect free: ModelConfigMismatch,
  // ModelParameterCountMismatch, ModelParameterMismatch{index},
  // ModelParameterRevisionMismatch{index, cache, model}, LayerCountMismatch,
  // LayerLengthInvariant, LayerBatchSizeMismatch, LayerCapacityMismatch,
  // IncrementalAttention{layer, ...} (kv/bind_checks.cc).
  Result<void> CheckBinding(const DecoderModel& model) const;

  const ModelConfig& config() const { return config_; }
  // The longest slot's length: the length of a single-sequence cache, and of
  // every sequence of an equal-length batch.
  size_t len() const;
  size_t capacity() const { return capacity_; }
  size_t batch_size() const { return batch_size_; }
  size_t slot_count() const { return batch_size_; }
  Precision precision() const { return precision_; }
  KvType kv_type() const { return kv_type_; }
  bool is_empty() const { return len() == 0; }
  bool is_full() const { return len() == capacity_; }
  // True when every slot's prompt is complete (spec §3.2 for one slot).
  bool prefill_complete() const;
  bool is_bound() const { return bound_.load(std::memory_order_acquire); }
  const KvWork& work() const { return work_; }  // the sum over slots

  // One slot's state (nothing for an out-of-range slot: length 0, not complete,
  // zero work).
  size_t slot_len(size_t slot) const { return slot < slots_.size() ? slots_[slot].len : 0; }
  bool slot_prefill_complete(size_t slot) const {
    return slot < slots_.size() && slots_[slot].prefill_complete;
  }
  KvWork slot_work(size_t slot) const { return slot < slots_.size() ? slots_[slot].work : KvWork{}; }
  size_t layer_count() const { return layers_.size(); }
  const LayerKvCache* layer(size_t index) const {
    return index < layers_.size() ? &layers_[index] : nullptr;
  }
  size_t layer_len(size_t index) const { return index < layers_.size() ? layers_[index].len() : 0; }
  const std::vector<ParameterBinding>& bindings() const { return bindings_; }
  // Bytes of K/V storage over all layers.
  size_t storage_bytes() const;

  // spec §3.9: config, layers (physical storage included), len,
  // prefill_complete, counters and bindings.
  bool operator==(const DecoderKvCache& other) const;

  // ---- The session's side. ---------------------------------------------------
  // Claims the cache for one session: of any number of threads claiming a free
  // cache, exactly one gets true. Release frees it again.
  bool TryClaim();
  void Release();
  // The layers, for the engine to write a step's rows past the slots' lengths.
  std::span<LayerKvCache> layers() { return layers_; }
  // Before the engine writes rows [start, end) of a slot: backs the pages of those
  // rows, in every lane of every layer, with memory in one system call per lane,
  // ahead by a block of kBackedBlockBytes a lane, so that a step's writes do not
  // take a page fault each (and where the system refuses the memory, the step
  // fails here with nothing changed). A slot's rows are backed a block at a time,
  // when a step first writes into the block; the memory stays proportional to the
  // positions written, plus at most one block a lane.
  Result<void> BackRows(size_t slot, size_t start, size_t end);
  // The commit of one slot: `len` rows visible in every layer, `work` its counters.
  void CommitSlot(size_t slot, size_t len, const KvWork& work);
  // The total after a commit (the sum of the slots' committed work).
  void CommitTotal(const KvWork& total) { work_ = total; }
  void MarkPromptComplete(size_t slot) { slots_[slot].prefill_complete = true; }
  // Slot `slot` to Empty (length 0 in every layer, not prompting); its counters
  // leave the total. Rows past the length stay as they were.
  void ClearSlot(size_t slot);
  // Every slot to Empty, the total to zero.
  void Clear();
  // The slot keeps rows [0, len), len <= slot_len (a rewind: its counters keep
  // the work done).
  void TruncateSlot(size_t slot, size_t len);
  // `destination` becomes a copy of `source`'s rows, length and prompt state; its
  // own counters leave the total (no tokens were forwarded for the copy).
  void ForkSlot(size_t source, size_t destination);

 private:
  friend struct KvCacheTestAccess;
  DecoderKvCache() = default;

  ModelConfig config_;
  size_t batch_size_ = 1;
  size_t capacity_ = 0;
  Precision precision_ = Precision::kF64;
  KvType kv_type_ = KvType::kEngine;
  std::vector<ParameterBinding> bindings_;
  std::vector<LayerKvCache> layers_;
  struct SlotState {
    size_t len = 0;
    bool prefill_complete = false;
    KvWork work;
    bool operator==(const SlotState&) const = default;
  };
  std::vector<SlotState> slots_;  // [batch_size]
  KvWork work_;                   // Σ over slots
  std::atomic<bool> bound_{false};  // claimed atomically by TryClaim
};

}  // namespace kvrt
