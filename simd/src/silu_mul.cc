// Run-time dispatch of SiluMul (silu_mul.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "silu_mul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "silu_mul-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {

void SiluMulF32(const float* gate, const float* up, float* out, size_t n) {
  SiluMulRow(hn::ScalableTag<float>(), gate, up, out, n);
}
void SiluMulF64(const double* gate, const double* up, double* out, size_t n) {
  SiluMulRow(hn::ScalableTag<double>(), gate, up, out, n);
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kvrt/simd/silu_mul.h"

namespace kvrt::simd {

HWY_EXPORT(SiluMulF32);
HWY_EXPORT(SiluMulF64);

void SiluMul(const float* gate, const float* up, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(SiluMulF32)(gate, up, out, n);
}
void SiluMul(const double* gate, const double* up, double* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(SiluMulF64)(gate, up, out, n);
}

}  // namespace kvrt::simd
#endif  // HWY_ONCE
