// Where element (k, n) of a [K, N] matrix lives in the f32/f64 column-panel layout
// of the fast kernels (simd/packed_matrix.h), for code that fills or reads panels
// one element or one source row at a time (seeded packed models, streamed loads,
// parameter updates) instead of packing a whole dense matrix at once.
#pragma once

#include <cstddef>

#include "kvrt/simd/packed_matrix.h"

namespace kvrt::detail {

template <class T>
inline size_t PanelOffset(size_t k, size_t n, size_t rows) {
  constexpr size_t kWidth = simd::kPanelWidth<T>;
  return (n / kWidth) * rows * kWidth + k * kWidth + n % kWidth;
}

// Panel coordinates of element (row, column) of a parameter of logical shape
// [shape_rows, shape_columns]: the matrix itself, or its transpose.
struct PanelCoordinates {
  size_t k = 0;
  size_t n = 0;
  size_t rows = 0;  // K of the packed matrix
};

inline PanelCoordinates PanelCoordinatesOf(size_t row, size_t column, size_t shape_rows,
                                           size_t shape_columns, bool transposed) {
  return transposed ? PanelCoordinates{column, row, shape_columns}
                    : PanelCoordinates{row, column, shape_rows};
}

}  // namespace kvrt::detail
