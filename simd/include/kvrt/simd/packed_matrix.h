// The weight layout shared by the matrix kernels.
//
// A weight matrix W is [rows = inputs K, cols = outputs N] and applied as y = x·W
// (spec/model.md §4). Packed, it is a sequence of column panels:
//   data: [ceil(N / panel_width)][K][panel_width], the last panel zero-padded,
// so a matrix–vector product streams each panel once and a matrix–matrix
// micro-kernel reads a panel row as `panel_width` contiguous values.
// A dense row-major [K, N] matrix is the special case panel_width = N.
#pragma once

#include <cstddef>

namespace kvrt::simd {

// The panel width of the fast matrix kernels (matvec.h, matmul.h) and of PackMatrix
// (pack_matrix.h): two 64-byte AVX-512 vectors per panel row, i.e. 32 floats or 16
// doubles. It is the same on every compiled target, so one packed copy serves the
// AVX3, AVX2 and scalar code paths; only AVX-512 uses it at full register width
// (an 8×32 float micro-tile = 16 zmm accumulators).
template <class T>
inline constexpr size_t kPanelWidth = 2 * 64 / sizeof(T);

template <class T>
struct PackedMatrixView {
  const T* data = nullptr;
  size_t rows = 0;         // K
  size_t cols = 0;         // N
  size_t panel_width = 0;  // NR (columns per panel)
  // Elements from one panel to the next; 0 means rows · panel_width. A larger
  // stride views the first `rows` rows of a packed matrix that has more (the
  // visible keys of an attention block, say).
  size_t panel_stride = 0;

  static PackedMatrixView Dense(const T* data, size_t rows, size_t cols) {
    return {data, rows, cols, cols};
  }
  // The layout written by PackMatrix: panel_width = kPanelWidth<T>.
  static PackedMatrixView Panels(const T* data, size_t rows, size_t cols) {
    return {data, rows, cols, kPanelWidth<T>};
  }
  // The first `first_rows` rows of this matrix, without repacking.
  PackedMatrixView TopRows(size_t first_rows) const {
    PackedMatrixView top = *this;
    top.rows = first_rows;
    top.panel_stride = stride();
    return top;
  }
  size_t panels() const { return panel_width == 0 ? 0 : (cols + panel_width - 1) / panel_width; }
  size_t stride() const { return panel_stride != 0 ? panel_stride : rows * panel_width; }
  const T* panel(size_t p) const { return data + p * stride(); }
  T at(size_t k, size_t n) const {
    return panel(n / panel_width)[k * panel_width + n % panel_width];
  }
};

// Number of elements of the packed storage of a [rows, cols] matrix.
inline size_t PackedElementCount(size_t rows, size_t cols, size_t panel_width) {
  return (cols + panel_width - 1) / panel_width * rows * panel_width;
}

// Number of elements PackMatrix writes for a [rows, cols] matrix of element type T.
template <class T>
size_t PackedElementCount(size_t rows, size_t cols) {
  return PackedElementCount(rows, cols, kPanelWidth<T>);
}

}  // namespace kvrt::simd
