#include "kvrt/simd/pack_matrix.h"

#include <algorithm>

namespace kvrt::simd {
namespace {

// Panel by panel. A transposed source ([N][K]) is read along its rows (k innermost)
// and written with stride NR inside one panel, which stays in cache; a plain source
// ([K][N]) is read and written row by row.
template <class Out, class In>
PackedMatrixView<Out> PackPanels(const In* source, size_t rows, size_t cols, bool transposed,
                                 Out* out) {
  constexpr size_t kWidth = kPanelWidth<Out>;
  const auto view = PackedMatrixView<Out>::Panels(out, rows, cols);
  for (size_t p = 0; p < view.panels(); ++p) {
    Out* panel = out + p * rows * kWidth;
    const size_t first = p * kWidth;
    const size_t width = std::min(kWidth, cols - first);
    if (transposed) {
      for (size_t j = 0; j < width; ++j) {
        const In* column = source + (first + j) * rows;
        for (size_t k = 0; k < rows; ++k) panel[k * kWidth + j] = static_cast<Out>(column[k]);
      }
    } else {
      for (size_t k = 0; k < rows; ++k) {
        const In* row = source + k * cols + first;
        for (size_t j = 0; j < width; ++j) panel[k * kWidth + j] = static_cast<Out>(row[j]);
      }
    }
    for (size_t k = 0; k < rows; ++k) {
      std::fill(panel + k * kWidth + width, panel + (k + 1) * kWidth, Out(0));
    }
  }
  return view;
}

}  // namespace

PackedMatrixView<float> PackMatrix(const float* source, size_t rows, size_t cols,
                                   bool source_is_transposed, float* out) {
  return PackPanels(source, rows, cols, source_is_transposed, out);
}
PackedMatrixView<float> PackMatrix(const double* source, size_t rows, size_t cols,
                                   bool source_is_transposed, float* out) {
  return PackPanels(source, rows, cols, source_is_transposed, out);
}
PackedMatrixView<double> PackMatrix(const float* source, size_t rows, size_t cols,
                                    bool source_is_transposed, double* out) {
  return PackPanels(source, rows, cols, source_is_transposed, out);
}
PackedMatrixView<double> PackMatrix(const double* source, size_t rows, size_t cols,
                                    bool source_is_transposed, double* out) {
  return PackPanels(source, rows, cols, source_is_transposed, out);
}

}  // namespace kvrt::simd
