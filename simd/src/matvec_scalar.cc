#include <algorithm>

#include "kvrt/simd/matvec.h"

namespace kvrt::simd {
namespace {

// Row-axpy order over each panel: output n receives x[0]·W[0][n], then x[1]·W[1][n],
// ... which is exactly the ascending per-output sum of the reference.
template <class T>
void MatVecAscending(const PackedMatrixView<T>& w, const T* x, T* y, size_t panel_begin,
                     size_t panel_end) {
  for (size_t p = panel_begin; p < panel_end; ++p) {
    const T* panel = w.panel(p);
    const size_t first = p * w.panel_width;
    const size_t width = std::min(w.panel_width, w.cols - first);
    T* out = y + first;
    for (size_t n = 0; n < width; ++n) out[n] = T(0);
    for (size_t k = 0; k < w.rows; ++k) {
      const T xk = x[k];
      const T* row = panel + k * w.panel_width;
      for (size_t n = 0; n < width; ++n) out[n] = out[n] + xk * row[n];
    }
  }
}

}  // namespace

void MatVecScalar(const PackedMatrixView<float>& w, const float* x, float* y) {
  MatVecAscending(w, x, y, 0, w.panels());
}
void MatVecScalar(const PackedMatrixView<double>& w, const double* x, double* y) {
  MatVecAscending(w, x, y, 0, w.panels());
}
void MatVecScalar(const PackedMatrixView<float>& w, const float* x, float* y, size_t panel_begin,
                  size_t panel_end) {
  MatVecAscending(w, x, y, panel_begin, panel_end);
}
void MatVecScalar(const PackedMatrixView<double>& w, const double* x, double* y,
                  size_t panel_begin, size_t panel_end) {
  MatVecAscending(w, x, y, panel_begin, panel_end);
}

}  // namespace kvrt::simd
