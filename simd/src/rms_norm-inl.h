// Per-target body of RmsNorm (rms_norm.h).
#if defined(KVRT_SIMD_RMS_NORM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_RMS_NORM_INL_H_
#undef KVRT_SIMD_RMS_NORM_INL_H_
#else
#define KVRT_SIMD_RMS_NORM_INL_H_
#endif

#include <cmath>
#include <cstddef>

#include "dot-inl.h"
#include "hwy/highway.h"
#include "masked_load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// y[j] = (x[j]·inverse)·gain[j], the twin's two roundings. x == y is fine.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void ScaleByGain(D d, const T* x, T inverse, const T* gain, T* y, size_t n) {
  const size_t lanes = hn::Lanes(d);
  const auto inv = hn::Set(d, inverse);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(d, x + i), inv), hn::LoadU(d, gain + i)), d, y + i);
  }
  if (i < n) {
    const auto tail = hn::FirstN(d, n - i);
    const auto scaled =
        hn::Mul(hn::Mul(MaskedLoadInBounds(tail, d, x + i), inv), MaskedLoadInBounds(tail, d, gain + i));
    hn::BlendedStore(scaled, tail, d, y + i);
  }
}

// Returns inv = 1/sqrt(Σx²/n + eps) and writes y. The sum of squares is the dot
// kernel of x with itself.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE T RmsNormRow(D d, const T* x, const T* gain, T epsilon, T* y, size_t n) {
  const T mean_square = DotProduct(d, x, x, n) / static_cast<T>(n);
  const T inverse = T(1) / std::sqrt(mean_square + epsilon);
  ScaleByGain(d, x, inverse, gain, y, n);
  return inverse;
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_RMS_NORM_INL_H_ toggle
