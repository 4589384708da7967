// Run-time dispatch of MatVec (matvec.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "matvec.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "matvec-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {

void MatVecF32(const PackedMatrixView<float>& w, const float* x, float* y, size_t panel_begin,
               size_t panel_end) {
  MatVecPanels(hn::ScalableTag<float>(), w, x, y, panel_begin, panel_end);
}
void MatVecF64(const PackedMatrixView<double>& w, const double* x, double* y, size_t panel_begin,
               size_t panel_end) {
  MatVecPanels(hn::ScalableTag<double>(), w, x, y, panel_begin, panel_end);
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kvrt/simd/matvec.h"

namespace kvrt::simd {

HWY_EXPORT(MatVecF32);
HWY_EXPORT(MatVecF64);

// Only the kPanelWidth layout has a vector kernel; other layouts use the twin.
void MatVec(const PackedMatrixView<float>& w, const float* x, float* y, size_t panel_begin,
            size_t panel_end) {
  if (w.panel_width != kPanelWidth<float>) return MatVecScalar(w, x, y, panel_begin, panel_end);
  HWY_DYNAMIC_DISPATCH(MatVecF32)(w, x, y, panel_begin, panel_end);
}
void MatVec(const PackedMatrixView<double>& w, const double* x, double* y, size_t panel_begin,
            size_t panel_end) {
  if (w.panel_width != kPanelWidth<double>) return MatVecScalar(w, x, y, panel_begin, panel_end);
  HWY_DYNAMIC_DISPATCH(MatVecF64)(w, x, y, panel_begin, panel_end);
}

}  // namespace kvrt::simd
#endif  // HWY_ONCE
