// Run-time dispatch of RmsNorm (rms_norm.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "rms_norm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "rms_norm-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {

float RmsNormF32(const float* x, const float* gain, float epsilon, float* y, size_t n) {
  return RmsNormRow(hn::ScalableTag<float>(), x, gain, epsilon, y, n);
}
double RmsNormF64(const double* x, const double* gain, double epsilon, double* y, size_t n) {
  return RmsNormRow(hn::ScalableTag<double>(), x, gain, epsilon, y, n);
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kvrt/simd/rms_norm.h"

namespace kvrt::simd {

HWY_EXPORT(RmsNormF32);
HWY_EXPORT(RmsNormF64);

float RmsNorm(const float* x, const float* gain, float epsilon, float* y, size_t n) {
  return HWY_DYNAMIC_DISPATCH(RmsNormF32)(x, gain, epsilon, y, n);
}
double RmsNorm(const double* x, const double* gain, double epsilon, double* y, size_t n) {
  return HWY_DYNAMIC_DISPATCH(RmsNormF64)(x, gain, epsilon, y, n);
}

}  // namespace kvrt::simd
#endif  // HWY_ONCE
