// Run-time dispatch of RopeRotate (rope.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "rope.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "rope-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {

void RopeRotateF32(float* v, const float* cos, const float* sin, size_t pairs, size_t heads) {
  RotateHeads(hn::ScalableTag<float>(), v, cos, sin, pairs, heads);
}
void RopeRotateF64(double* v, const double* cos, const double* sin, size_t pairs, size_t heads) {
  RotateHeads(hn::ScalableTag<double>(), v, cos, sin, pairs, heads);
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kvrt/simd/rope.h"

namespace kvrt::simd {

HWY_EXPORT(RopeRotateF32);
HWY_EXPORT(RopeRotateF64);

void RopeRotate(float* v, const float* cos, const float* sin, size_t pairs, size_t heads) {
  HWY_DYNAMIC_DISPATCH(RopeRotateF32)(v, cos, sin, pairs, heads);
}
void RopeRotate(double* v, const double* cos, const double* sin, size_t pairs, size_t heads) {
  HWY_DYNAMIC_DISPATCH(RopeRotateF64)(v, cos, sin, pairs, heads);
}

}  // namespace kvrt::simd
#endif  // HWY_ONCE
