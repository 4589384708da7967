// Run-time dispatch of Dot (dot.h): one copy of dot-inl.h per compiled target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "dot.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "dot-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {

float DotF32(const float* a, const float* b, size_t n) {
  return DotProduct(hn::ScalableTag<float>(), a, b, n);
}
double DotF64(const double* a, const double* b, size_t n) {
  return DotProduct(hn::ScalableTag<double>(), a, b, n);
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kvrt/simd/dot.h"

namespace kvrt::simd {

HWY_EXPORT(DotF32);
HWY_EXPORT(DotF64);

float Dot(const float* a, const float* b, size_t n) { return HWY_DYNAMIC_DISPATCH(DotF32)(a, b, n); }
double Dot(const double* a, const double* b, size_t n) {
  return HWY_DYNAMIC_DISPATCH(DotF64)(a, b, n);
}

}  // namespace kvrt::simd
#endif  // HWY_ONCE
