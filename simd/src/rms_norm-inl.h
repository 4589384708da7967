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

// The largest |x[j]|.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE T LargestMagnitude(D d, const T* x, size_t n) {
  const size_t lanes = hn::Lanes(d);
  auto largest = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) largest = hn::Max(largest, hn::Abs(hn::LoadU(d, x + i)));
  if (i < n) largest = hn::Max(largest, hn::Abs(MaskedLoadInBounds(hn::FirstN(d, n - i), d, x + i)));
  return hn::GetLane(hn::MaxOfLanes(d, largest));
}

// A finite row whose Σx² overflows: y = x·2^-e first, with 2^e above the largest
// |x| (exact: a power of two only moves exponents), then the row is normalised
// from y, whose sum of squares is at most n. Returns the overall inverse
// 2^-e·inv, which may be subnormal or zero; y does not lose those bits. This
// costs three passes, but only on rows the one-pass path would zero.
template <class D, typename T = hn::TFromD<D>>
HWY_NOINLINE T RmsNormScaledRow(D d, const T* x, const T* gain, T epsilon, T* y, size_t n, T largest) {
  int exponent = 0;
  std::frexp(largest, &exponent);  // largest = f·2^exponent, 0.5 ≤ f < 1
  const T down = std::ldexp(T(1), -exponent);
  const size_t lanes = hn::Lanes(d);
  const auto scale = hn::Set(d, down);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::Mul(hn::LoadU(d, x + i), scale), d, y + i);
  if (i < n) {
    const auto tail = hn::FirstN(d, n - i);
    hn::BlendedStore(hn::Mul(MaskedLoadInBounds(tail, d, x + i), scale), tail, d, y + i);
  }
  const T mean_square = DotProduct(d, y, y, n) / static_cast<T>(n);
  const T inverse = T(1) / std::sqrt(mean_square + epsilon * down * down);
  ScaleByGain(d, y, inverse, gain, y, n);
  return inverse * down;
}

// Returns inv = 1/sqrt(Σx²/n + eps) and writes y. The sum of squares is the dot
// kernel of x with itself. When it overflows although every x[j] is finite (huge
// weights or activations), squaring the row as it is would give inv = 0 and an
// all-zero output, so that row is scaled down before it is squared; the test is
// on the sum the fast path computes anyway, so ordinary rows pay nothing.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE T RmsNormRow(D d, const T* x, const T* gain, T epsilon, T* y, size_t n) {
  const T mean_square = DotProduct(d, x, x, n) / static_cast<T>(n);
  if (HWY_UNLIKELY(std::isinf(mean_square))) {
    const T largest = LargestMagnitude(d, x, n);
    // An infinite x[j] stays on the one-pass path: inv = 0 makes it NaN, which
    // the engine reports as a non-finite activation.
    if (std::isfinite(largest)) return RmsNormScaledRow(d, x, gain, epsilon, y, n, largest);
  }
  const T inverse = T(1) / std::sqrt(mean_square + epsilon);
  ScaleByGain(d, x, inverse, gain, y, n);
  return inverse;
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_RMS_NORM_INL_H_ toggle
