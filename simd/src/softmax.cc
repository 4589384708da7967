// Run-time dispatch of Softmax (softmax.h): one copy of softmax-inl.h per target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "softmax.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "softmax-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {

void SoftmaxF32(const float* in, float* out, size_t n) {
  SoftmaxRow(hn::ScalableTag<float>(), in, out, n);
}
void SoftmaxF64(const double* in, double* out, size_t n) {
  SoftmaxRow(hn::ScalableTag<double>(), in, out, n);
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kvrt/simd/softmax.h"

namespace kvrt::simd {

HWY_EXPORT(SoftmaxF32);
HWY_EXPORT(SoftmaxF64);

void Softmax(const float* in, float* out, size_t n) { HWY_DYNAMIC_DISPATCH(SoftmaxF32)(in, out, n); }
void Softmax(const double* in, double* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(SoftmaxF64)(in, out, n);
}

}  // namespace kvrt::simd
#endif  // HWY_ONCE
