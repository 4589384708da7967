// Per-target body of AttentionScores (attention_scores.h).
#if defined(KVRT_SIMD_ATTENTION_SCORES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_ATTENTION_SCORES_INL_H_
#undef KVRT_SIMD_ATTENTION_SCORES_INL_H_
#else
#define KVRT_SIMD_ATTENTION_SCORES_INL_H_
#endif

#include <cstddef>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Σ q[i]·key[i] for kKeys keys at once: one accumulator chain per key over the head
// (the keys' chains are independent, which hides the FMA latency of short heads),
// then one lane reduction per key. A key's result does not depend on kKeys.
template <size_t kKeys, class D, typename T = hn::TFromD<D>>
HWY_INLINE void ScoreKeyGroup(D d, const T* q, const T* key, size_t key_stride,
                              size_t head_width, T scale, T* out) {
  const size_t lanes = hn::Lanes(d);
  hn::Vec<D> acc[kKeys];
  for (size_t j = 0; j < kKeys; ++j) acc[j] = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= head_width; i += lanes) {
    const auto query = hn::LoadU(d, q + i);
    for (size_t j = 0; j < kKeys; ++j) {
      acc[j] = hn::MulAdd(query, hn::LoadU(d, key + j * key_stride + i), acc[j]);
    }
  }
  if (i < head_width) {
    const auto tail = hn::FirstN(d, head_width - i);
    const auto query = hn::MaskedLoad(tail, d, q + i);
    for (size_t j = 0; j < kKeys; ++j) {
      acc[j] = hn::MulAdd(query, hn::MaskedLoad(tail, d, key + j * key_stride + i), acc[j]);
    }
  }
  for (size_t j = 0; j < kKeys; ++j) out[j] = hn::GetLane(hn::SumOfLanes(d, acc[j])) * scale;
}

template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void ScoreKeys(D d, const T* q, const T* keys, size_t key_stride, size_t count,
                          size_t head_width, T scale, T* out) {
  constexpr size_t kGroup = 4;
  size_t p = 0;
  for (; p + kGroup <= count; p += kGroup) {
    ScoreKeyGroup<kGroup>(d, q, keys + p * key_stride, key_stride, head_width, scale, out + p);
  }
  for (; p < count; ++p) {
    ScoreKeyGroup<1>(d, q, keys + p * key_stride, key_stride, head_width, scale, out + p);
  }
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_ATTENTION_SCORES_INL_H_ toggle
