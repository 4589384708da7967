// Per-target body of AttentionScores (attention_scores.h).
#if defined(KVRT_SIMD_ATTENTION_SCORES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_ATTENTION_SCORES_INL_H_
#undef KVRT_SIMD_ATTENTION_SCORES_INL_H_
#else
#define KVRT_SIMD_ATTENTION_SCORES_INL_H_
#endif

#include <cstddef>
#include <type_traits>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kv_load-inl.h"
#include "masked_load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The lane sum of one score accumulator. On AVX3 (f32) it is spelled out as the
// halving tree (lanes i and i + 8, then i and i + 4, i and i + 2, i and i + 1), which
// SumOf16Lanes below reproduces for sixteen accumulators at once: a key's score is
// then the same bits whichever of the two reduced it. Elsewhere SumOfLanes.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE T SumOfScoreLanes(D d, hn::Vec<D> v) {
#if HWY_TARGET == HWY_AVX3
  if constexpr (std::is_same_v<T, float>) {
    const __m512 x = v.raw;
    const __m256 low = _mm512_castps512_ps256(x);
    const __m256 high = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1));
    const __m256 t8 = _mm256_add_ps(low, high);
    const __m128 t4 = _mm_add_ps(_mm256_castps256_ps128(t8), _mm256_extractf128_ps(t8, 1));
    const __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));
    return _mm_cvtss_f32(_mm_add_ss(t2, _mm_shuffle_ps(t2, t2, 1)));
  }
#endif
  return hn::GetLane(hn::SumOfLanes(d, v));
}

#if HWY_TARGET == HWY_AVX3
// The lane sums of sixteen f32 vectors in the tree of SumOfScoreLanes, as one vector:
// lane j holds the sum of a[j]. Each stage adds the two halves of two inputs in one
// add (their halves gathered by a shuffle), so sixteen reductions take 15 adds and 30
// shuffles instead of 16 × (4 adds + 4 shuffles + an extract).
HWY_INLINE __m512 SumOf16Lanes(const __m512* a) {
  // Stage k's output lane order makes the final lane 4c + j hold input 4j + c, so the
  // inputs are taken transposed (input 4j + c is a[4c + j]) to come out in order.
  __m512 half[8];  // lanes 0–7: input 2k folded onto 8 lanes; 8–15: input 2k + 1
  for (size_t k = 0; k < 8; ++k) {
    const size_t i0 = 2 * k, i1 = 2 * k + 1;
    const __m512 x = a[(i0 % 4) * 4 + i0 / 4], y = a[(i1 % 4) * 4 + i1 / 4];
    half[k] = _mm512_add_ps(_mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(1, 0, 1, 0)),
                            _mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(3, 2, 3, 2)));
  }
  __m512 quarter[4];  // 128-bit chunk c: input 4m + c folded onto 4 lanes
  for (size_t m = 0; m < 4; ++m) {
    quarter[m] = _mm512_add_ps(_mm512_shuffle_f32x4(half[2 * m], half[2 * m + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                               _mm512_shuffle_f32x4(half[2 * m], half[2 * m + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  }
  __m512 pair[2];  // chunk c: lanes 0–1 input 8n + c, lanes 2–3 input 8n + 4 + c, two lanes each
  for (size_t n = 0; n < 2; ++n) {
    pair[n] = _mm512_add_ps(_mm512_shuffle_ps(quarter[2 * n], quarter[2 * n + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                            _mm512_shuffle_ps(quarter[2 * n], quarter[2 * n + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  // chunk c: inputs c, 4 + c, 8 + c, 12 + c
  return _mm512_add_ps(_mm512_shuffle_ps(pair[0], pair[1], _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_ps(pair[0], pair[1], _MM_SHUFFLE(3, 1, 3, 1)));
}
#endif

// Σ q[i]·key[i] for kKeys keys at once into acc: one accumulator chain per key over
// the head (the keys' chains are independent, which hides the FMA latency of short
// heads). A key's chain does not depend on kKeys. Keys are T, or f16, bf16 or q8_0
// (KP a KvPointer), widened as they are loaded.
template <size_t kKeys, class D, class KP, typename T = hn::TFromD<D>>
HWY_INLINE void AccumulateKeyGroup(D d, const T* q, KP key, size_t key_stride,
                                   size_t head_width, hn::Vec<D>* acc) {
  const size_t lanes = hn::Lanes(d);
  for (size_t j = 0; j < kKeys; ++j) acc[j] = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= head_width; i += lanes) {
    const auto query = hn::LoadU(d, q + i);
    for (size_t j = 0; j < kKeys; ++j) {
      acc[j] = hn::MulAdd(query, LoadKv(d, key + j * key_stride + i), acc[j]);
    }
  }
  if (i < head_width) {
    const auto tail = hn::FirstN(d, head_width - i);
    const auto query = MaskedLoadInBounds(tail, d, q + i);
    for (size_t j = 0; j < kKeys; ++j) {
      acc[j] = hn::MulAdd(query, LoadKvTail(tail, d, key + j * key_stride + i), acc[j]);
    }
  }
}

// Scores of kKeys keys: their chains, then one lane reduction per key.
template <size_t kKeys, class D, class KP, typename T = hn::TFromD<D>>
HWY_INLINE void ScoreKeyGroup(D d, const T* q, KP key, size_t key_stride,
                              size_t head_width, T scale, T* out) {
  hn::Vec<D> acc[kKeys];
  AccumulateKeyGroup<kKeys>(d, q, key, key_stride, head_width, acc);
  for (size_t j = 0; j < kKeys; ++j) out[j] = SumOfScoreLanes(d, acc[j]) * scale;
}

template <class D, class KP, typename T = hn::TFromD<D>>
HWY_INLINE void ScoreKeys(D d, const T* q, KP keys, size_t key_stride, size_t count,
                          size_t head_width, T scale, T* out) {
  size_t p = 0;
#if HWY_TARGET == HWY_AVX3
  // Sixteen keys a call, reduced together: the same tree, so the same bits as below.
  if constexpr (std::is_same_v<T, float>) {
    constexpr size_t kWide = 16;
    const __m512 scale_vector = _mm512_set1_ps(scale);
    // The hardware prefetchers keep up with the value mix's one row after another
    // but not with sixteen key rows read a chunk of each at a time, so the group
    // kAhead keys on is requested while this one is scored (prefetches have no
    // effect on the arithmetic; docs/performance/kv_cache.md has the measurement).
    constexpr size_t kAhead = 2 * kWide;
    const size_t row_bytes = head_width * KvElementBytes(keys);
    for (; p + kWide <= count; p += kWide) {
      if (p + kAhead + kWide <= count) {
        for (size_t j = 0; j < kWide; ++j) {
          const char* row = KvAddress(keys + (p + kAhead + j) * key_stride);
          for (size_t line = 0; line < row_bytes; line += 64) hwy::Prefetch(row + line);
        }
      }
      hn::Vec<D> acc[kWide];
      AccumulateKeyGroup<kWide>(d, q, keys + p * key_stride, key_stride, head_width, acc);
      __m512 raw[kWide];
      for (size_t j = 0; j < kWide; ++j) raw[j] = acc[j].raw;
      _mm512_storeu_ps(out + p, _mm512_mul_ps(SumOf16Lanes(raw), scale_vector));
    }
  }
#endif
  constexpr size_t kGroup = 4;
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
