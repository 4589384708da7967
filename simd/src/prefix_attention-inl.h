// Per-target body of AttendPrefix (prefix_attention.h).
#if defined(KVRT_SIMD_PREFIX_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_PREFIX_ATTENTION_INL_H_
#undef KVRT_SIMD_PREFIX_ATTENTION_INL_H_
#else
#define KVRT_SIMD_PREFIX_ATTENTION_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <limits>

#include "attention_scores-inl.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kvrt/simd/prefix_attention.h"
#include "softmax-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Scores of prefix rows [begin, begin + n) into s[0, n). Each key's score is
// its own FMA chain (ScoreKeys), so where the segments split changes nothing.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void ScorePrefixTile(D d, const T* q, const PrefixSegment<T>& first,
                                const PrefixSegment<T>& second, size_t begin, size_t n,
                                size_t head_width, T scale, T* s) {
  size_t p = begin;
  const size_t end = begin + n;
  if (p < first.count) {
    const size_t m = std::min(end, first.count) - p;
    ScoreKeys(d, q, first.keys + p * first.stride, first.stride, m, head_width, scale, s);
    s += m;
    p += m;
  }
  if (p < end) {
    ScoreKeys(d, q, second.keys + (p - first.count) * second.stride, second.stride, end - p,
              head_width, scale, s);
  }
}

// s[i] = exp(s[i] − max) for i < n, added into `sum` lane by lane. Tiles start
// at multiples of kPrefixAttentionTile (a multiple of every lane count), so lane
// k always sums the exps of p ≡ k (mod lanes) in ascending p, across tiles.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void ExpTile(D d, T* s, size_t n, T max_value, hn::Vec<D>& sum) {
  const size_t lanes = hn::Lanes(d);
  const auto shift = hn::Set(d, max_value);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, s + i), shift));
    hn::StoreU(e, d, s + i);
    sum = hn::Add(sum, e);
  }
  if (i < n) {  // only in the last tile of a prefix
    const auto tail = hn::FirstN(d, n - i);
    const auto e =
        hn::IfThenElseZero(tail, hn::Exp(d, hn::Sub(hn::MaskedLoad(tail, d, s + i), shift)));
    hn::BlendedStore(e, tail, d, s + i);
    sum = hn::Add(sum, e);
  }
}

// Columns [col, col + kVecs·lanes) of the value mix for tile rows [begin,
// begin + n) with weights e[0, n): the even-p and odd-p accumulators are loaded
// from memory, advanced in ascending p and stored back, so a tile boundary is
// invisible to the arithmetic. With kMaskedLast the last vector is masked.
template <size_t kVecs, bool kMaskedLast, class D, typename T = hn::TFromD<D>>
HWY_INLINE void MixTileColumns(D d, const T* e, const PrefixSegment<T>& first,
                               const PrefixSegment<T>& second, size_t begin, size_t n, size_t col,
                               hn::Mask<D> tail, T* even, T* odd) {
  const size_t lanes = hn::Lanes(d);
  const auto load = [&](const T* row, size_t v) {
    if (kMaskedLast && v + 1 == kVecs) return hn::MaskedLoad(tail, d, row + v * lanes);
    return hn::LoadU(d, row + v * lanes);
  };
  hn::Vec<D> ev[kVecs];
  hn::Vec<D> od[kVecs];
  for (size_t v = 0; v < kVecs; ++v) {
    ev[v] = load(even + col, v);
    od[v] = load(odd + col, v);
  }
  const size_t end = begin + n;
  const PrefixSegment<T>* segments[2] = {&first, &second};
  const size_t bounds[3] = {0, first.count, first.count + second.count};
  for (size_t g = 0; g < 2; ++g) {
    const size_t a = std::max(begin, bounds[g]), b = std::min(end, bounds[g + 1]);
    if (a >= b) continue;
    const PrefixSegment<T>& segment = *segments[g];
    const auto row_of = [&](size_t p) {
      return segment.values + (p - bounds[g]) * segment.stride + col;
    };
    const auto add = [&](size_t p, hn::Vec<D>* acc) {
      const auto w = hn::Set(d, e[p - begin]);
      const T* row = row_of(p);
      for (size_t v = 0; v < kVecs; ++v) acc[v] = hn::MulAdd(w, load(row, v), acc[v]);
    };
    size_t p = a;
    if (p % 2 == 1) add(p++, od);
    for (; p + 2 <= b; p += 2) {
      add(p, ev);
      add(p + 1, od);
    }
    if (p < b) add(p, ev);
  }
  for (size_t v = 0; v < kVecs; ++v) {
    if (kMaskedLast && v + 1 == kVecs) {
      hn::BlendedStore(ev[v], tail, d, even + col + v * lanes);
      hn::BlendedStore(od[v], tail, d, odd + col + v * lanes);
    } else {
      hn::StoreU(ev[v], d, even + col + v * lanes);
      hn::StoreU(od[v], d, odd + col + v * lanes);
    }
  }
}

// Column blocks of four vectors, then the rest (one to four vectors, the last
// one masked when head_width is not a multiple of the lanes) as one block, so
// every column of a head of up to four vectors is in flight at once (two FMA
// chains each). A column's arithmetic is the same in any block shape.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void MixTile(D d, const T* e, const PrefixSegment<T>& first,
                        const PrefixSegment<T>& second, size_t begin, size_t n, size_t head_width,
                        T* even, T* odd) {
  const size_t lanes = hn::Lanes(d);
  const auto all = hn::FirstN(d, lanes);
  size_t col = 0;
  for (; col + 4 * lanes <= head_width; col += 4 * lanes) {
    MixTileColumns<4, false>(d, e, first, second, begin, n, col, all, even, odd);
  }
  const size_t rest = head_width - col;
  if (rest == 0) return;
  const size_t full = rest / lanes;
  if (rest % lanes == 0) {
    switch (full) {
      case 1: return MixTileColumns<1, false>(d, e, first, second, begin, n, col, all, even, odd);
      case 2: return MixTileColumns<2, false>(d, e, first, second, begin, n, col, all, even, odd);
      default: return MixTileColumns<3, false>(d, e, first, second, begin, n, col, all, even, odd);
    }
  }
  const auto tail = hn::FirstN(d, rest - full * lanes);
  switch (full) {
    case 0: return MixTileColumns<1, true>(d, e, first, second, begin, n, col, tail, even, odd);
    case 1: return MixTileColumns<2, true>(d, e, first, second, begin, n, col, tail, even, odd);
    case 2: return MixTileColumns<3, true>(d, e, first, second, begin, n, col, tail, even, odd);
    default: return MixTileColumns<4, true>(d, e, first, second, begin, n, col, tail, even, odd);
  }
}

// out = (even + odd) · (1 / Σ lanes of sum): the end of every query row.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void FinishRow(D d, const T* even, const T* odd, hn::Vec<D> sum, size_t head_width,
                          T* out) {
  const auto reciprocal = hn::Set(d, T(1) / hn::GetLane(hn::SumOfLanes(d, sum)));
  const size_t lanes = hn::Lanes(d);
  size_t j = 0;
  for (; j + lanes <= head_width; j += lanes) {
    const auto mixed = hn::Add(hn::LoadU(d, even + j), hn::LoadU(d, odd + j));
    hn::StoreU(hn::Mul(mixed, reciprocal), d, out + j);
  }
  if (j < head_width) {
    const auto tail = hn::FirstN(d, head_width - j);
    const auto mixed =
        hn::Add(hn::MaskedLoad(tail, d, even + j), hn::MaskedLoad(tail, d, odd + j));
    hn::BlendedStore(hn::Mul(mixed, reciprocal), tail, d, out + j);
  }
}

template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void AttendPrefixRow(D d, const T* q, const PrefixSegment<T>& first,
                                const PrefixSegment<T>& second, size_t head_width, T scale,
                                T* scratch, T* out) {
  constexpr size_t kTile = kPrefixAttentionTile;
  const size_t n = first.count + second.count;
  if (n == 0) {
    std::fill_n(out, head_width, T(0));
    return;
  }
  T* s = scratch;
  T* even = scratch + kTile;
  T* odd = even + head_width;
  // Pass 1: the maximum score (order-free, hence exact). One tile keeps its scores.
  T max_value = -std::numeric_limits<T>::infinity();
  for (size_t begin = 0; begin < n; begin += kTile) {
    const size_t count = std::min(kTile, n - begin);
    ScorePrefixTile(d, q, first, second, begin, count, head_width, scale, s);
    max_value = std::max(max_value, RowMax(d, s, count));
  }
  // Pass 2: exps, their sum and the value mix, carried across tiles.
  std::fill_n(even, 2 * head_width, T(0));
  auto sum = hn::Zero(d);
  for (size_t begin = 0; begin < n; begin += kTile) {
    const size_t count = std::min(kTile, n - begin);
    if (n > kTile) ScorePrefixTile(d, q, first, second, begin, count, head_width, scale, s);
    ExpTile(d, s, count, max_value, sum);
    MixTile(d, s, first, second, begin, count, head_width, even, odd);
  }
  FinishRow(d, even, odd, sum, head_width, out);
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_PREFIX_ATTENTION_INL_H_ toggle
