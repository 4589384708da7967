// One decoder block's K/V storage (spec/kv-cache.md §1).
//
// A layer holds `batch_size` sequence slots. Keys and values are each [slot,
// kv_heads, capacity, row_elements] row-major: lane = slot·kv_heads + h owns
// capacity·row_elements contiguous elements, allocated once and never reallocated
// (row_elements = head_width, or for a q8_0 cache whole blocks of quants, whose
// scales follow all the quants of the buffer, one per 32).
// Keys are stored RoPE-rotated at their own position, values unrotated. Every
// slot has its own length: only rows [0, slot_len) of its lanes are ever read;
// rows past it may hold stale data from before a reset or a truncation (or rows
// of a chunked prefill that failed), and equality compares the whole physical
// storage.
//
// Engines read and write rows through Lane(); only the cache (decoder_kv_cache.h)
// changes a slot's length, on the session's commit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/buffer.h"
#include "kvrt/engine_options.h"
#include "kvrt/simd/prefix_attention.h"
#include "kvrt/error.h"
#include "model/decoder_model.h"

namespace kvrt {

struct KvCacheTestAccess;  // tests/runtime: white-box tampering for invariant tests

// A parameter node and the value revision it had when it was captured.
struct ParameterBinding {
  ParameterPtr node;
  uint64_t revision = 0;
  bool operator==(const ParameterBinding& other) const {
    return node == other.node && revision == other.revision;
  }
};

// One lane's rows [0, capacity), row_elements() elements each.
template <class T>
struct KvLane {
  T* keys = nullptr;
  T* values = nullptr;
};

// A q8_0 lane: the quants of its rows, and their scales, one per
// simd::kQ8KvBlock quants (scales[i / 32] the scale of quants[i]).
template <>
struct KvLane<simd::Q8> {
  simd::Q8* keys = nullptr;
  simd::Q8* values = nullptr;
  simd::Half* key_scales = nullptr;
  simd::Half* value_scales = nullptr;
};

class LayerKvCache {
 public:
  // spec/kv-cache.md §1.1: ZeroBatchSize, ZeroCapacity, CapacityExceedsPositions,
  // ElementCountOverflow (((B·H)·cap)·hw), AllocationFailed{elements}.
  static Result<LayerKvCache> Create(const DecoderModel& model, size_t layer, size_t batch_size,
                                     size_t capacity, Precision precision,
                                     KvType kv_type = KvType::kEngine);

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
  KvType kv_type() const { return kv_type_; }
  size_t lanes() const { return batch_size_ * heads_; }
  size_t element_count() const { return lanes() * capacity_ * head_width_; }
  // Elements one stored row takes: head_width, or whole q8_0 blocks of quants.
  size_t row_elements() const { return row_elements_; }
  const std::vector<ParameterBinding>& bindings() const { return bindings_; }  // q, k, v, o

  // The storage of lane (slot, kv_head) in the cache's element type: T = double
  // for an f64 cache, float for an f32 one, simd::Half / simd::Bf16 / simd::Q8
  // for an f32 cache of kF16 / kBf16 / kQ8_0.
  // Engines write a step's rows past the slot's length, where no reader looks
  // until the session commits them.
  template <class T>
  KvLane<T> Lane(size_t slot, size_t kv_head) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, simd::Half> ||
                  std::is_same_v<T, simd::Bf16> || std::is_same_v<T, simd::Q8>);
    const size_t offset = (slot * heads_ + kv_head) * capacity_ * row_elements_;
    if constexpr (std::is_same_v<T, simd::Q8>) {
      const size_t scale = quant_count() + offset / simd::kQ8KvBlock * sizeof(simd::Half);
      return {reinterpret_cast<T*>(keys_.data()) + offset, reinterpret_cast<T*>(values_.data()) + offset,
              reinterpret_cast<simd::Half*>(keys_.data() + scale),
              reinterpret_cast<simd::Half*>(values_.data() + scale)};
    } else {
      return {reinterpret_cast<T*>(keys_.data()) + offset, reinterpret_cast<T*>(values_.data()) + offset};
    }
  }

  // Backs the pages of rows [from, to) of the slot's key and value lanes with
  // memory ahead of the engine's writes (memory::BackPagesForWriting); false when
  // the system has none. Contents and lengths stay as they are.
  bool BackRows(size_t slot, size_t from, size_t to);

  // Where the physical storage lives (spec evidence that layers own distinct
  // buffers and that reset reuses them).
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
  friend class DecoderKvCache;  // sets slot lengths on commit, copies rows on fork
  friend struct KvCacheTestAccess;
  LayerKvCache() = default;

  std::vector<double> Storage(const Buffer<std::byte>& buffer, bool logical) const;
  // Stored element i of a buffer (i = (lane·capacity + row)·row_elements + column), as f64.
  double Element(const Buffer<std::byte>& buffer, size_t i) const;
  size_t ElementsIn(const Buffer<std::byte>& buffer) const;  // quants, for q8_0
  bool StorageEqual(const Buffer<std::byte>& first, const Buffer<std::byte>& second) const;
  // Elements (quants, for q8_0) of a whole buffer; a q8_0 buffer's scales follow them.
  size_t quant_count() const { return lanes() * capacity_ * row_elements_; }
  // Where rows [from, to) of a lane lie in a buffer: one byte range, or a q8_0
  // lane's quants and then its scales.
  struct ByteRanges {
    size_t offset[2] = {};
    size_t bytes[2] = {};
    size_t count = 0;
  };
  ByteRanges RowRanges(size_t lane, size_t from, size_t to) const;
  // Rows [0, rows) of every lane of `source` copied into `destination`'s lanes.
  void CopySlotRows(size_t source, size_t destination, size_t rows);

  size_t batch_size_ = 0;
  size_t model_width_ = 0;
  size_t heads_ = 0;
  size_t head_width_ = 0;
  size_t capacity_ = 0;
  size_t row_elements_ = 0;
  std::vector<size_t> lens_;  // [batch]: every slot's length
  Precision precision_ = Precision::kF64;
  KvType kv_type_ = KvType::kEngine;
  Buffer<std::byte> keys_;    // [batch, heads, capacity, head_width] of KvElementSize
  Buffer<std::byte> values_;  // same layout
  std::vector<ParameterBinding> bindings_;
  // RoPE fingerprint: feature width, positions and the bits of the base.
  size_t rope_feature_width_ = 0;
  size_t rope_max_positions_ = 0;
  uint64_t rope_base_bits_ = 0;
};

}  // namespace kvrt
