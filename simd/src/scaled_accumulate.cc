// Run-time dispatch of ScaledAccumulate (scaled_accumulate.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "scaled_accumulate.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "scaled_accumulate-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {

void ScaledAccumulateF32(float w, const float* x, float* y, size_t n) {
  AxpyInPlace(hn::ScalableTag<float>(), w, x, y, n);
}
void ScaledAccumulateF64(double w, const double* x, double* y, size_t n) {
  AxpyInPlace(hn::ScalableTag<double>(), w, x, y, n);
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kvrt/simd/scaled_accumulate.h"

namespace kvrt::simd {

HWY_EXPORT(ScaledAccumulateF32);
HWY_EXPORT(ScaledAccumulateF64);

void ScaledAccumulate(float w, const float* x, float* y, size_t n) {
  HWY_DYNAMIC_DISPATCH(ScaledAccumulateF32)(w, x, y, n);
}
void ScaledAccumulate(double w, const double* x, double* y, size_t n) {
  HWY_DYNAMIC_DISPATCH(ScaledAccumulateF64)(w, x, y, n);
}

}  // namespace kvrt::simd
#endif  // HWY_ONCE
