// Causal attention of a multi-row step (a prefill) as small matrix products.
//
// Per (query head, query tile) the scores are S = Q·Kᵀ and the head outputs
// O = P·V, both on the matmul kernel. The keys and values a layer attends to are
// packed once per key/value lane into the kernel's panel layout (Kᵀ: [hw, keys],
// V: [keys, hw]), so every query tile of every head sharing that lane reuses them.
// A tile only reads the keys its last row can see; the rest of each row's causal
// mask is applied by its softmax length and zeroed probabilities.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "kvrt/buffer.h"
#include "kvrt/error.h"
#include "kvrt/simd/matmul.h"
#include "kvrt/simd/pack_matrix.h"
#include "kvrt/simd/packed_matrix.h"
#include "kvrt/simd/softmax.h"
#include "kvrt/threading/thread_pool.h"

namespace kvrt::detail {

template <class T>
class BlockAttention {
 public:
  static constexpr size_t kQueryTile = 64;
  // Most score elements one worker holds: a tile of kQueryTile rows up to 4096
  // keys; for a longer context the tile shrinks (to one row at 2^18 keys), so
  // the scratch stops growing with capacity × workers × 64.
  static constexpr size_t kScoreBudget = kQueryTile * 4096;

  // Where a step's queries, keys and values are and where the outputs go.
  struct Step {
    size_t batch = 1, heads = 1, kv_heads = 1, head_width = 0;
    size_t start = 0, rows = 0;  // positions [start, start + rows) are new
    const T* queries = nullptr;  // row (b, r), head h at queries + (b·rows + r)·query_stride + h·hw
    size_t query_stride = 0;
    const T* keys = nullptr;  // lane-major cache storage [lanes, capacity, hw]
    const T* values = nullptr;
    T* outputs = nullptr;  // row (b, r), head h at outputs + (b·rows + r)·output_stride + h·hw
    size_t output_stride = 0;
  };

  Result<void> Allocate(size_t kv_lanes, size_t capacity, size_t head_width, size_t workers) {
    capacity_ = capacity;
    tile_ = std::clamp<size_t>(kScoreBudget / std::max<size_t>(1, capacity), 1, kQueryTile);
    const size_t per_lane = std::max(simd::PackedElementCount<T>(head_width, capacity),
                                     simd::PackedElementCount<T>(capacity, head_width));
    std::optional<Buffer<T>> keys = Buffer<T>::Allocate(kv_lanes * per_lane);
    std::optional<Buffer<T>> values = Buffer<T>::Allocate(kv_lanes * per_lane);
    std::optional<Buffer<T>> scores = Buffer<T>::Allocate(workers * tile_ * capacity);
    if (!keys || !values || !scores) {
      return Fail(ErrorCode::kAllocationFailed, {{"elements", uint64_t{2 * kv_lanes * per_lane}}},
                  "could not allocate the block attention workspace");
    }
    lane_elements_ = per_lane;
    packed_keys_ = std::move(*keys);
    packed_values_ = std::move(*values);
    scores_ = std::move(*scores);
    return {};
  }

  void Run(threading::ThreadPool* pool, const Step& step) {
    const size_t hw = step.head_width, keys = step.start + step.rows;
    const size_t kv_lanes = step.batch * step.kv_heads;
    // Kᵀ and V of every key/value lane, once per layer.
    auto pack = [&](size_t lane, size_t) {
      const T* lane_keys = step.keys + lane * capacity_ * hw;
      const T* lane_values = step.values + lane * capacity_ * hw;
      simd::PackMatrix(lane_keys, hw, keys, /*source_is_transposed=*/true, PackedKeys(lane));
      simd::PackMatrix(lane_values, keys, hw, /*source_is_transposed=*/false, PackedValues(lane));
    };
    threading::ParallelFor(pool, kv_lanes, pack);

    const size_t tiles = (step.rows + tile_ - 1) / tile_;
    const size_t query_lanes = step.batch * step.heads, group = step.heads / step.kv_heads;
    const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(hw)));
    auto attend = [&](size_t index, size_t worker) {
      const size_t lane = index % query_lanes, tile = index / query_lanes;
      const size_t b = lane / step.heads, h = lane % step.heads;
      const size_t kv_lane = b * step.kv_heads + h / group;
      const size_t first = tile * tile_, count = std::min(tile_, step.rows - first);
      const size_t visible_to_tile = step.start + first + count;  // keys of the tile's last row
      T* scores = scores_.data() + worker * tile_ * capacity_;
      const auto key_view = simd::PackedMatrixView<T>::Panels(PackedKeys(kv_lane), hw, keys);
      const T* q = step.queries + (b * step.rows + first) * step.query_stride + h * hw;
      simd::MatMul(q, step.query_stride, count, key_view, scores, capacity_, 0,
                   (visible_to_tile + key_view.panel_width - 1) / key_view.panel_width);
      for (size_t r = 0; r < count; ++r) {
        T* row = scores + r * capacity_;
        const size_t visible = step.start + first + r + 1;
        for (size_t j = 0; j < visible; ++j) row[j] *= scale;
        simd::Softmax(row, row, visible);
        std::fill(row + visible, row + visible_to_tile, T(0));  // the causal mask
      }
      const auto value_view = simd::PackedMatrixView<T>::Panels(PackedValues(kv_lane), keys, hw)
                                  .TopRows(visible_to_tile);
      T* out = step.outputs + (b * step.rows + first) * step.output_stride + h * hw;
      simd::MatMul(scores, capacity_, count, value_view, out, step.output_stride, 0,
                   value_view.panels());
    };
    threading::ParallelFor(pool, query_lanes * tiles, attend);
  }

 private:
  T* PackedKeys(size_t lane) { return packed_keys_.data() + lane * lane_elements_; }
  T* PackedValues(size_t lane) { return packed_values_.data() + lane * lane_elements_; }

  size_t capacity_ = 0;
  size_t tile_ = kQueryTile;  // query rows per tile
  size_t lane_elements_ = 0;
  Buffer<T> packed_keys_;    // [kv lanes][Kᵀ panels: hw × keys]
  Buffer<T> packed_values_;  // [kv lanes][V panels: keys × hw]
  Buffer<T> scores_;         // [workers][tile_][capacity]
};

}  // namespace kvrt::detail
