// Scalar twins of the compressed matrix kernels (compressed_matrix.h): each panel row is
// dequantized to the values at() returns, then the f32 twins' order (matvec_scalar.cc):
// output n receives x[0]·W[0][n], then x[1]·W[1][n], ..., every product rounded.
#include <algorithm>

#include "compressed_layout.h"
#include "kvrt/simd/compressed_matrix.h"

namespace kvrt::simd {

void MatVecScalar(const CompressedMatrixView& w, const float* x, float* y, size_t panel_begin,
                  size_t panel_end) {
  using compressed::kWidth;
  for (size_t p = panel_begin; p < panel_end; ++p) {
    const compressed::PanelRows panel = compressed::RowsOfPanel(w, p);
    const size_t first = p * kWidth;
    const size_t width = std::min(kWidth, w.cols - first);
    float* out = y + first;
    for (size_t n = 0; n < width; ++n) out[n] = 0.0f;
    float row[kWidth];
    for (size_t k = 0; k < w.rows; ++k) {
      compressed::DequantizeRow(w.type, panel, k, row);
      const float xk = x[k];
      for (size_t n = 0; n < width; ++n) out[n] = out[n] + xk * row[n];
    }
  }
}

void MatMulScalar(const float* a, size_t lda, size_t m, const CompressedMatrixView& w, float* c,
                  size_t ldc, size_t panel_begin, size_t panel_end) {
  for (size_t row = 0; row < m; ++row) {
    MatVecScalar(w, a + row * lda, c + row * ldc, panel_begin, panel_end);
  }
}

}  // namespace kvrt::simd
