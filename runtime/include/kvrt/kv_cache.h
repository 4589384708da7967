// K/V caches: one LayerKvCache per decoder block, and DecoderKvCache over all of
// them (spec/kv-cache.md §1, §3).
//
// A cache holds `batch_size` sequence slots. Storage of every layer: keys and
// values, each [slot, kv_heads, capacity, head_width] row-major (lane =
// slot·kv_heads + h owns capacity·head_width contiguous elements), allocated once
// and never reallocated. Keys are stored RoPE-rotated at their own position,
// values unrotated. Every slot has its own length: only rows [0, slot_len) of its
// lanes are ever read; rows past it may hold stale data from before a reset or a
// truncation (or rows of a chunked prefill that failed), and equality compares
// the whole physical storage.
//
// A DecoderKvCache has no public state operations: prefill, decode, steps over
// slots and the per-slot operations go through a DecoderKvSession obtained from
// Bind (session.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kvrt/buffer.h"
#include "kvrt/config.h"
#include "kvrt/engine_options.h"
#include "kvrt/error.h"
#include "kvrt/model.h"
#include "kvrt/parameter.h"

namespace kvrt {

class DecoderKvSession;
namespace detail {
struct KvStorageAccess;    // engines' typed access to the storage (runtime/src)
struct KvCacheTestAccess;  // white-box tampering for invariant tests (runtime/src)
}  // namespace detail

// A parameter node and the value revision it had when it was captured.
struct ParameterBinding {
  ParameterPtr node;
  uint64_t revision = 0;
  bool operator==(const ParameterBinding& other) const {
    return node == other.node && revision == other.revision;
  }
};

class LayerKvCache {
 public:
  // spec/kv-cache.md §1.1: ZeroBatchSize, ZeroCapacity, CapacityExceedsPositions,
  // ElementCountOverflow (((B·H)·cap)·hw), AllocationFailed{elements}.
  static Result<LayerKvCache> Create(const DecoderModel& model, size_t layer, size_t batch_size,
                                     size_t capacity, Precision precision);

  LayerKvCache(LayerKvCache&&) noexcept = default;
  LayerKvCache& operator=(LayerKvCache&&) noexcept = default;
  LayerKvCache(const LayerKvCache&) = delete;
  LayerKvCache& operator=(const LayerKvCache&) = delete;
  // A deep copy (storage included); AllocationFailed when memory runs out.
  Result<LayerKvCache> Clone() const;

  size_t batch_size() const { return batch_size_; }
  size_t model_width() const { return model_width_; }
  size_t heads() const { return heads_; }  // key/value heads
  size_t head_width() const { return head_width_; }
  size_t capacity() const { return capacity_; }
  // The longest slot's length (the length of every slot of a single-sequence or
  // an equal-length batch cache).
  size_t len() const;
  size_t slot_len(size_t slot) const { return slot < lens_.size() ? lens_[slot] : 0; }
  bool is_empty() const { return len() == 0; }
  bool is_full() const { return len() == capacity_; }
  Precision precision() const { return precision_; }
  size_t lanes() const { return batch_size_ * heads_; }
  size_t element_count() const { return lanes() * capacity_ * head_width_; }
  const std::vector<ParameterBinding>& bindings() const { return bindings_; }  // q, k, v, o

  // Where the physical storage lives (spec evidence that layers own distinct
  // buffers and that reset reuses them). Engines read and write it through
  // detail::KvStorageAccess (engine/engine.h).
  const void* key_address() const { return keys_.data(); }
  const void* value_address() const { return values_.data(); }
  // Whole physical buffers as f64 (for audits and reset evidence).
  std::vector<double> KeyStorage() const;
  std::vector<double> ValueStorage() const;
  // Logical snapshots as f64 (spec §1.5): [B, H, len, hw] when every slot has one
  // length; otherwise each lane's own rows [0, slot_len), lane after lane.
  std::vector<double> KeysSnapshot() const;
  std::vector<double> ValuesSnapshot() const;

  // spec §1.7: geometry, len, whole physical buffers (element ==), RoPE
  // fingerprint and bindings.
  bool operator==(const LayerKvCache& other) const;

 private:
  friend class DecoderKvCache;
  friend class DecoderKvSession;
  friend struct detail::KvStorageAccess;
  friend struct detail::KvCacheTestAccess;
  LayerKvCache() = default;

  std::vector<double> Storage(const Buffer<std::byte>& buffer, bool logical) const;

  size_t batch_size_ = 0;
  size_t model_width_ = 0;
  size_t heads_ = 0;
  size_t head_width_ = 0;
  size_t capacity_ = 0;
  std::vector<size_t> lens_;  // [batch]: every slot's length
  Precision precision_ = Precision::kF64;
  Buffer<std::byte> keys_;    // [batch, heads, capacity, head_width] of precision_
  Buffer<std::byte> values_;  // same layout
  std::vector<ParameterBinding> bindings_;
  // RoPE fingerprint: feature width, positions and the bits of the base.
  size_t rope_feature_width_ = 0;
  size_t rope_max_positions_ = 0;
  uint64_t rope_base_bits_ = 0;
};

// Work counters of a cache (spec/kv-cache.md §4), advanced only when a token step
// commits and zeroed by reset. Every slot has its own; the cache's total is their
// sum (for a batch of B sequences every per-token counter counts B tokens per
// step; B = 1 gives the reference's numbers).
struct KvWork {
  uint64_t token_forwards = 0;
  uint64_t prefill_tokens = 0;
  uint64_t decode_tokens = 0;
  uint64_t cache_appends = 0;           // rows appended, one per layer per token
  uint64_t qkv_projection_rows = 0;     // 3 per layer per token
  uint64_t attention_score_values = 0;  // Σ over layers of B·H·(position + 1)
  bool operator==(const KvWork&) const = default;
};

struct CacheOptions {
  size_t batch_size = 1;  // sequence slots
  size_t capacity = 0;  // 0: the model's max_positions (the reference's choice)
  // Element type of the stored rows; it must match the engine the cache binds to
  // (f32 for the default fast engine, f64 for ReferenceEngine()).
  Precision precision = Precision::kF32;
};

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

  // spec §3.3: ModelConfigMismatch, ModelParameterCountMismatch,
  // ModelParameterMismatch{index}, ModelParameterRevisionMismatch{index, cache,
  // model}, LayerCountMismatch, LayerLengthInvariant, LayerBatchSizeMismatch,
  // LayerCapacityMismatch, IncrementalAttention{layer, ...}; and CacheAlreadyBound
  // when another session holds this cache. A rejected bind changes nothing. The
  // session keeps a pointer to this cache: the cache must outlive it and must not
  // be moved while bound.
  Result<DecoderKvSession> Bind(const DecoderModel& model, EngineOptions options = {});

  const ModelConfig& config() const { return config_; }
  // The longest slot's length: the length of a single-sequence cache, and of
  // every sequence of an equal-length batch.
  size_t len() const;
  size_t capacity() const { return capacity_; }
  size_t batch_size() const { return batch_size_; }
  size_t slot_count() const { return batch_size_; }
  Precision precision() const { return precision_; }
  bool is_empty() const { return len() == 0; }
  bool is_full() const { return len() == capacity_; }
  // True when every slot's prompt is complete (spec §3.2 for one slot).
  bool prefill_complete() const;
  bool is_bound() const { return bound_.load(std::memory_order_acquire); }
  const KvWork& work() const { return work_; }  // the sum over slots

  // One slot's state (nothing for an out-of-range slot: length 0, not complete,
  // zero work). A slot is Empty (len 0), Prompting (a prompt fed in chunks
  // through DecoderKvSession::Step, not yet complete), or Active/Full.
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

 private:
  friend class DecoderKvSession;
  friend struct detail::KvCacheTestAccess;
  DecoderKvCache() = default;
  // The binding checks of spec/kv-cache.md §3.3 (cache/bind_checks.cc).
  Result<void> CheckBinding(const DecoderModel& model) const;

  ModelConfig config_;
  size_t batch_size_ = 1;
  size_t capacity_ = 0;
  Precision precision_ = Precision::kF64;
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
  std::atomic<bool> bound_{false};  // claimed atomically by Bind
};

}  // namespace kvrt
