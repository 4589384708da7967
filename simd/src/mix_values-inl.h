// Per-target body of MixValues (mix_values.h).
#if defined(KVRT_SIMD_MIX_VALUES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_MIX_VALUES_INL_H_
#undef KVRT_SIMD_MIX_VALUES_INL_H_
#else
#define KVRT_SIMD_MIX_VALUES_INL_H_
#endif

#include <cstddef>

#include "hwy/highway.h"
#include "masked_load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// out[0, kVecs·lanes) = Σ_p weights[p]·value_p[0, kVecs·lanes), the block held in
// registers across all p. Even and odd p use separate accumulators, so two chains
// per column are in flight; their sum is the result. With kMaskedLast, `tail` masks
// the block's last vector (the head_width remainder): masked lanes never touch memory.
template <size_t kVecs, bool kMaskedLast, class D, typename T = hn::TFromD<D>>
HWY_INLINE void MixColumnBlock(D d, const T* weights, const T* values, size_t value_stride,
                               size_t count, hn::Mask<D> tail, T* out) {
  const size_t lanes = hn::Lanes(d);
  const auto load = [&](const T* row, size_t v) {
    if (kMaskedLast && v + 1 == kVecs) return MaskedLoadInBounds(tail, d, row + v * lanes);
    return hn::LoadU(d, row + v * lanes);
  };
  hn::Vec<D> even[kVecs];
  hn::Vec<D> odd[kVecs];
  for (size_t v = 0; v < kVecs; ++v) even[v] = odd[v] = hn::Zero(d);
  size_t p = 0;
  for (; p + 2 <= count; p += 2) {
    const T* even_row = values + p * value_stride;
    const T* odd_row = even_row + value_stride;
    const auto even_weight = hn::Set(d, weights[p]);
    const auto odd_weight = hn::Set(d, weights[p + 1]);
    for (size_t v = 0; v < kVecs; ++v) {
      even[v] = hn::MulAdd(even_weight, load(even_row, v), even[v]);
      odd[v] = hn::MulAdd(odd_weight, load(odd_row, v), odd[v]);
    }
  }
  if (p < count) {
    const T* even_row = values + p * value_stride;
    const auto even_weight = hn::Set(d, weights[p]);
    for (size_t v = 0; v < kVecs; ++v) even[v] = hn::MulAdd(even_weight, load(even_row, v), even[v]);
  }
  for (size_t v = 0; v < kVecs; ++v) {
    const auto sum = hn::Add(even[v], odd[v]);
    if (kMaskedLast && v + 1 == kVecs) {
      hn::BlendedStore(sum, tail, d, out + v * lanes);
    } else {
      hn::StoreU(sum, d, out + v * lanes);
    }
  }
}

// Column blocks of four vectors (eight accumulators), then single vectors, then the
// masked remainder. Every column's arithmetic is the same in any block shape.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void MixValueRows(D d, const T* weights, const T* values, size_t value_stride,
                             size_t count, size_t head_width, T* out) {
  const size_t lanes = hn::Lanes(d);
  const auto all = hn::FirstN(d, lanes);
  size_t col = 0;
  for (; col + 4 * lanes <= head_width; col += 4 * lanes) {
    MixColumnBlock<4, false>(d, weights, values + col, value_stride, count, all, out + col);
  }
  for (; col + lanes <= head_width; col += lanes) {
    MixColumnBlock<1, false>(d, weights, values + col, value_stride, count, all, out + col);
  }
  if (col < head_width) {
    MixColumnBlock<1, true>(d, weights, values + col, value_stride, count,
                            hn::FirstN(d, head_width - col), out + col);
  }
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_MIX_VALUES_INL_H_ toggle
