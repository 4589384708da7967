// Per-target body of RopeRotate (rope.h).
#if defined(KVRT_SIMD_ROPE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_ROPE_INL_H_
#undef KVRT_SIMD_ROPE_INL_H_
#else
#define KVRT_SIMD_ROPE_INL_H_
#endif

#include <algorithm>
#include <cstddef>

#include "hwy/highway.h"
#include "masked_load-inl.h"
#include "kvrt/simd/rope.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR

// One lane cannot hold a pair: the scalar twin is this target's implementation.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void RotateHeads(D /*d*/, T* v, const T* cos, const T* sin, size_t pairs,
                            size_t heads) {
  RopeRotateScalar(v, cos, sin, pairs, heads);
}

#else

// Rotates `width` (even) interleaved values x = [x0 x1 x0 x1 ..] in place:
// x' = x·cos_pairs + swap_pairs(x)·sin_pairs, separate products and sum (no FMA), so
// lane 2i is x0·c + x1·(−s) ≡ x0·c − x1·s and lane 2i+1 is x1·c + x0·s ≡ x0·s + x1·c,
// rounding for rounding the twin's arithmetic.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void RotateInterleaved(D d, T* x, const T* cos_pairs, const T* sin_pairs,
                                  size_t width) {
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= width; i += lanes) {
    const auto v = hn::LoadU(d, x + i);
    const auto rotated = hn::Add(hn::Mul(v, hn::Load(d, cos_pairs + i)),
                                 hn::Mul(hn::Reverse2(d, v), hn::Load(d, sin_pairs + i)));
    hn::StoreU(rotated, d, x + i);
  }
  if (i < width) {
    // width and lanes are even, so the tail holds whole pairs.
    const auto tail = hn::FirstN(d, width - i);
    const auto v = MaskedLoadInBounds(tail, d, x + i);
    const auto rotated =
        hn::Add(hn::Mul(v, MaskedLoadInBounds(tail, d, cos_pairs + i)),
                hn::Mul(hn::Reverse2(d, v), MaskedLoadInBounds(tail, d, sin_pairs + i)));
    hn::BlendedStore(rotated, tail, d, x + i);
  }
}

// The tables are expanded to lane-pair form once per chunk of pairs and reused for
// every head; the chunk bounds the stack buffers for any head width.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void RotateHeads(D d, T* v, const T* cos, const T* sin, size_t pairs, size_t heads) {
  constexpr size_t kChunkPairs = 128;
  HWY_ALIGN T cos_pairs[2 * kChunkPairs];  // [c0 c0 c1 c1 ..]
  HWY_ALIGN T sin_pairs[2 * kChunkPairs];  // [−s0 s0 −s1 s1 ..]
  for (size_t first = 0; first < pairs; first += kChunkPairs) {
    const size_t chunk = std::min(kChunkPairs, pairs - first);
    for (size_t j = 0; j < chunk; ++j) {
      cos_pairs[2 * j] = cos[first + j];
      cos_pairs[2 * j + 1] = cos[first + j];
      sin_pairs[2 * j] = -sin[first + j];
      sin_pairs[2 * j + 1] = sin[first + j];
    }
    for (size_t h = 0; h < heads; ++h) {
      RotateInterleaved(d, v + h * 2 * pairs + 2 * first, cos_pairs, sin_pairs, 2 * chunk);
    }
  }
}

#endif  // HWY_TARGET == HWY_SCALAR

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_ROPE_INL_H_ toggle
