// Entry points of the compressed matrix kernels (compressed_matrix.h). Until the Highway
// kernels land, they are computed by the scalar twins.
#include "kvrt/simd/compressed_matrix.h"

namespace kvrt::simd {

void MatVec(const CompressedMatrixView& w, const float* x, float* y, size_t panel_begin,
            size_t panel_end) {
  MatVecScalar(w, x, y, panel_begin, panel_end);
}

void MatMul(const float* a, size_t lda, size_t m, const CompressedMatrixView& w, float* c,
            size_t ldc, size_t panel_begin, size_t panel_end) {
  MatMulScalar(a, lda, m, w, c, ldc, panel_begin, panel_end);
}

}  // namespace kvrt::simd
