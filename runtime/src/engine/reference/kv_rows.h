// The K/V rows one layer's attention reads during a forward step.
//
// Rows [0, start) are committed cache rows; rows [start, start + new rows) are the
// step's own rows, written by the step before attention reads them. Both parts use
// the lane-major layout of spec/kv-cache.md §1.2 ([lanes, stride, head_width], lane =
// b·kv_heads + kv_head). New rows live either in a staging buffer (a decode step:
// nothing is written to the cache before the commit) or in the cache's own slots
// past the logical length (a batched prefill: invisible until the commit).
#pragma once

#include <cstddef>

namespace kvrt::detail {

template <class T>
struct LayerKvRows {
  const T* committed_keys = nullptr;
  const T* committed_values = nullptr;
  size_t committed_stride = 0;  // rows per lane in the committed buffers (the capacity)
  T* new_keys = nullptr;
  T* new_values = nullptr;
  size_t new_stride = 0;  // rows per lane in the new-row buffers
  size_t start = 0;       // committed rows = position of the first new row
  size_t head_width = 0;

  const T* key(size_t lane, size_t row) const {
    return row < start ? committed_keys + (lane * committed_stride + row) * head_width
                       : new_keys + (lane * new_stride + (row - start)) * head_width;
  }
  const T* value(size_t lane, size_t row) const {
    return row < start ? committed_values + (lane * committed_stride + row) * head_width
                       : new_values + (lane * new_stride + (row - start)) * head_width;
  }
  T* new_key(size_t lane, size_t new_row) const {
    return new_keys + (lane * new_stride + new_row) * head_width;
  }
  T* new_value(size_t lane, size_t new_row) const {
    return new_values + (lane * new_stride + new_row) * head_width;
  }
};

}  // namespace kvrt::detail
