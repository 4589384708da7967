// Per-target body of SiluMul (silu_mul.h).
#if defined(KVRT_SIMD_SILU_MUL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_SILU_MUL_INL_H_
#undef KVRT_SIMD_SILU_MUL_INL_H_
#else
#define KVRT_SIMD_SILU_MUL_INL_H_
#endif

#include <cstddef>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "masked_load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// (g·σ(g))·up with the twin's branch-stable σ, both branches at once: e = exp(−|g|)
// never overflows, σ = 1/(1+e) for g ≥ 0 and e/(1+e) for g < 0.
template <class D, class V>
HWY_INLINE V GatedSilu(D d, V g, V up) {
  const auto one = hn::Set(d, 1);
  const auto e = hn::Exp(d, hn::Neg(hn::Abs(g)));
  const auto numerator = hn::IfThenElse(hn::Lt(g, hn::Zero(d)), e, one);
  const auto sigmoid = hn::Div(numerator, hn::Add(one, e));
  return hn::Mul(hn::Mul(g, sigmoid), up);
}

// out[i] = SiLU(gate[i])·up[i]; out may be gate or up (read before written).
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void SiluMulRow(D d, const T* gate, const T* up, T* out, size_t n) {
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(GatedSilu(d, hn::LoadU(d, gate + i), hn::LoadU(d, up + i)), d, out + i);
  }
  if (i < n) {
    const auto tail = hn::FirstN(d, n - i);
    const auto gated =
        GatedSilu(d, MaskedLoadInBounds(tail, d, gate + i), MaskedLoadInBounds(tail, d, up + i));
    hn::BlendedStore(gated, tail, d, out + i);
  }
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_SILU_MUL_INL_H_ toggle
