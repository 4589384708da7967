#include "kvrt/simd/matmul.h"
#include "kvrt/simd/matvec.h"

namespace kvrt::simd {
namespace {

template <class T>
void MatMulRows(const T* a, size_t lda, size_t m, const PackedMatrixView<T>& w, T* c, size_t ldc,
                size_t panel_begin, size_t panel_end) {
  for (size_t row = 0; row < m; ++row) {
    MatVecScalar(w, a + row * lda, c + row * ldc, panel_begin, panel_end);
  }
}

}  // namespace

void MatMulScalar(const float* a, size_t lda, size_t m, const PackedMatrixView<float>& w,
                  float* c, size_t ldc) {
  MatMulRows(a, lda, m, w, c, ldc, 0, w.panels());
}
void MatMulScalar(const double* a, size_t lda, size_t m, const PackedMatrixView<double>& w,
                  double* c, size_t ldc) {
  MatMulRows(a, lda, m, w, c, ldc, 0, w.panels());
}
void MatMulScalar(const float* a, size_t lda, size_t m, const PackedMatrixView<float>& w,
                  float* c, size_t ldc, size_t panel_begin, size_t panel_end) {
  MatMulRows(a, lda, m, w, c, ldc, panel_begin, panel_end);
}
void MatMulScalar(const double* a, size_t lda, size_t m, const PackedMatrixView<double>& w,
                  double* c, size_t ldc, size_t panel_begin, size_t panel_end) {
  MatMulRows(a, lda, m, w, c, ldc, panel_begin, panel_end);
}

}  // namespace kvrt::simd
