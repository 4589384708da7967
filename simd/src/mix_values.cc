// Run-time dispatch of MixValues (mix_values.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "mix_values.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "mix_values-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {

void MixValuesF32(const float* weights, const float* values, size_t value_stride, size_t count,
                  size_t head_width, float* out) {
  MixValueRows(hn::ScalableTag<float>(), weights, values, value_stride, count, head_width, out);
}
void MixValuesF64(const double* weights, const double* values, size_t value_stride, size_t count,
                  size_t head_width, double* out) {
  MixValueRows(hn::ScalableTag<double>(), weights, values, value_stride, count, head_width, out);
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kvrt/simd/mix_values.h"

namespace kvrt::simd {

HWY_EXPORT(MixValuesF32);
HWY_EXPORT(MixValuesF64);

void MixValues(const float* weights, const float* values, size_t value_stride, size_t count,
               size_t head_width, float* out) {
  HWY_DYNAMIC_DISPATCH(MixValuesF32)(weights, values, value_stride, count, head_width, out);
}
void MixValues(const double* weights, const double* values, size_t value_stride, size_t count,
               size_t head_width, double* out) {
  HWY_DYNAMIC_DISPATCH(MixValuesF64)(weights, values, value_stride, count, head_width, out);
}

}  // namespace kvrt::simd
#endif  // HWY_ONCE
