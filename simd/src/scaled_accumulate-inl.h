// Per-target body of ScaledAccumulate (scaled_accumulate.h).
#if defined(KVRT_SIMD_SCALED_ACCUMULATE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_SCALED_ACCUMULATE_INL_H_
#undef KVRT_SIMD_SCALED_ACCUMULATE_INL_H_
#else
#define KVRT_SIMD_SCALED_ACCUMULATE_INL_H_
#endif

#include <cstddef>

#include "hwy/highway.h"
#include "masked_load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// y[i] = fma(w, x[i], y[i]). Unrolled by four so the loop is bound by loads and
// stores, not by branches; x == y is fine because each element is read before it is
// written.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void AxpyInPlace(D d, T w, const T* x, T* y, size_t n) {
  const size_t lanes = hn::Lanes(d);
  const auto scale = hn::Set(d, w);
  size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    for (size_t j = i; j < i + 4 * lanes; j += lanes) {
      hn::StoreU(hn::MulAdd(scale, hn::LoadU(d, x + j), hn::LoadU(d, y + j)), d, y + j);
    }
  }
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::MulAdd(scale, hn::LoadU(d, x + i), hn::LoadU(d, y + i)), d, y + i);
  }
  if (i < n) {
    const auto tail = hn::FirstN(d, n - i);
    const auto sum =
        hn::MulAdd(scale, MaskedLoadInBounds(tail, d, x + i), MaskedLoadInBounds(tail, d, y + i));
    hn::BlendedStore(sum, tail, d, y + i);
  }
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_SCALED_ACCUMULATE_INL_H_ toggle
