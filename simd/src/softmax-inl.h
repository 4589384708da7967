// Per-target body of Softmax (softmax.h).
#if defined(KVRT_SIMD_SOFTMAX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_SOFTMAX_INL_H_
#undef KVRT_SIMD_SOFTMAX_INL_H_
#else
#define KVRT_SIMD_SOFTMAX_INL_H_
#endif

#include <cstddef>
#include <limits>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "masked_load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Largest entry of in[0, n); −inf for n = 0. Order-free, hence exact.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE T RowMax(D d, const T* in, size_t n) {
  const size_t lanes = hn::Lanes(d);
  const auto lowest = hn::Set(d, -std::numeric_limits<T>::infinity());
  auto max0 = lowest;
  auto max1 = lowest;
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    max0 = hn::Max(max0, hn::LoadU(d, in + i));
    max1 = hn::Max(max1, hn::LoadU(d, in + i + lanes));
  }
  for (; i + lanes <= n; i += lanes) max0 = hn::Max(max0, hn::LoadU(d, in + i));
  if (i < n) {
    // Masked lanes would load 0, which may exceed a negative maximum.
    const auto tail = hn::FirstN(d, n - i);
    max1 = hn::Max(max1, hn::IfThenElse(tail, MaskedLoadInBounds(tail, d, in + i), lowest));
  }
  return hn::GetLane(hn::MaxOfLanes(d, hn::Max(max0, max1)));
}

// out[i] = exp(in[i] − max) for i < n; returns their sum (the denominator).
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE T StoreShiftedExps(D d, const T* in, T max_value, T* out, size_t n) {
  const size_t lanes = hn::Lanes(d);
  const auto shift = hn::Set(d, max_value);
  auto sum0 = hn::Zero(d);
  auto sum1 = hn::Zero(d);
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto e0 = hn::Exp(d, hn::Sub(hn::LoadU(d, in + i), shift));
    const auto e1 = hn::Exp(d, hn::Sub(hn::LoadU(d, in + i + lanes), shift));
    hn::StoreU(e0, d, out + i);
    hn::StoreU(e1, d, out + i + lanes);
    sum0 = hn::Add(sum0, e0);
    sum1 = hn::Add(sum1, e1);
  }
  for (; i + lanes <= n; i += lanes) {
    const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, in + i), shift));
    hn::StoreU(e, d, out + i);
    sum0 = hn::Add(sum0, e);
  }
  if (i < n) {
    const auto tail = hn::FirstN(d, n - i);
    const auto e =
        hn::IfThenElseZero(tail, hn::Exp(d, hn::Sub(MaskedLoadInBounds(tail, d, in + i), shift)));
    hn::BlendedStore(e, tail, d, out + i);
    sum1 = hn::Add(sum1, e);
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(sum0, sum1)));
}

// out[i] ·= 1/denominator for i < n. A vector division costs ~5 cycles per vector on
// AVX-512, a multiply 0.5: the reciprocal makes the whole softmax ~25% faster for one
// extra rounding (see softmax.h).
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void ScaleRow(D d, T denominator, T* out, size_t n) {
  const size_t lanes = hn::Lanes(d);
  const auto reciprocal = hn::Set(d, T(1) / denominator);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::Mul(hn::LoadU(d, out + i), reciprocal), d, out + i);
  }
  if (i < n) {
    const auto tail = hn::FirstN(d, n - i);
    hn::BlendedStore(hn::Mul(MaskedLoadInBounds(tail, d, out + i), reciprocal), tail, d, out + i);
  }
}

// Three passes over the row: max, shifted exps (stored in out) with their sum, scale.
// in and out may be the same row: every pass reads index i before writing index i.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void SoftmaxRow(D d, const T* in, T* out, size_t n) {
  if (n == 0) return;
  const T max_value = RowMax(d, in, n);
  const T denominator = StoreShiftedExps(d, in, max_value, out, n);
  ScaleRow(d, denominator, out, n);
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_SOFTMAX_INL_H_ toggle
