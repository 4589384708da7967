// Run-time dispatch of MatMul (matmul.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "matmul-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {

void MatMulF32(const float* a, size_t lda, size_t m, const PackedMatrixView<float>& w, float* c,
               size_t ldc, size_t panel_begin, size_t panel_end) {
  MatMulPanels(hn::ScalableTag<float>(), a, lda, m, w, c, ldc, panel_begin, panel_end);
}
void MatMulF64(const double* a, size_t lda, size_t m, const PackedMatrixView<double>& w,
               double* c, size_t ldc, size_t panel_begin, size_t panel_end) {
  MatMulPanels(hn::ScalableTag<double>(), a, lda, m, w, c, ldc, panel_begin, panel_end);
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kvrt/simd/matmul.h"

namespace kvrt::simd {

HWY_EXPORT(MatMulF32);
HWY_EXPORT(MatMulF64);

// Only the kPanelWidth layout has a vector kernel; other layouts use the twin.
void MatMul(const float* a, size_t lda, size_t m, const PackedMatrixView<float>& w, float* c,
            size_t ldc, size_t panel_begin, size_t panel_end) {
  if (w.panel_width != kPanelWidth<float>) {
    return MatMulScalar(a, lda, m, w, c, ldc, panel_begin, panel_end);
  }
  HWY_DYNAMIC_DISPATCH(MatMulF32)(a, lda, m, w, c, ldc, panel_begin, panel_end);
}
void MatMul(const double* a, size_t lda, size_t m, const PackedMatrixView<double>& w, double* c,
            size_t ldc, size_t panel_begin, size_t panel_end) {
  if (w.panel_width != kPanelWidth<double>) {
    return MatMulScalar(a, lda, m, w, c, ldc, panel_begin, panel_end);
  }
  HWY_DYNAMIC_DISPATCH(MatMulF64)(a, lda, m, w, c, ldc, panel_begin, panel_end);
}

}  // namespace kvrt::simd
#endif  // HWY_ONCE
