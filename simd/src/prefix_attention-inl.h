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
#include <type_traits>

#include "attention_scores-inl.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kv_load-inl.h"
#include "masked_load-inl.h"
#include "kvrt/simd/prefix_attention.h"
#include "softmax-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// fn(keys, values, stride, count, p) for the rows [begin, end) of each segment that
// has some, p the prefix index of the first of them. K is the stored element type
// (the computation's own, or Half, Bf16 or Q8), keys and values its KvPointers;
// every load of a K/V row goes through LoadKv.
template <class K, class Fn>
HWY_INLINE void ForSegmentRows(const PrefixSegment<K>& first, const PrefixSegment<K>& second,
                               size_t begin, size_t end, Fn&& fn) {
  if (begin < std::min(end, first.count)) {
    const size_t stop = std::min(end, first.count);
    fn(first.keys + begin * first.stride, first.values + begin * first.stride, first.stride,
       stop - begin, begin);
    begin = stop;
  }
  if (begin < end) {
    const size_t offset = begin - first.count;
    fn(second.keys + offset * second.stride, second.values + offset * second.stride,
       second.stride, end - begin, begin);
  }
}

// add(p, odd) for p in [begin, end) in ascending order, odd a std::bool_constant of
// p's parity, so that each call picks its chain of the value mix at compile time; two
// calls a loop turn, an even p then an odd one.
template <class Add>
HWY_INLINE void ForEachParity(size_t begin, size_t end, Add&& add) {
  size_t p = begin;
  if (p < end && p % 2 == 1) add(p++, std::true_type());
  for (; p + 2 <= end; p += 2) {
    add(p, std::false_type());
    add(p + 1, std::true_type());
  }
  if (p < end) add(p, std::false_type());
}

// Scores of prefix rows [begin, begin + n) into s[0, n). Each key's score is
// its own FMA chain (ScoreKeys), so where the segments split changes nothing.
template <class D, class K, typename T = hn::TFromD<D>>
HWY_INLINE void ScorePrefixTile(D d, const T* q, const PrefixSegment<K>& first,
                                const PrefixSegment<K>& second, size_t begin, size_t n,
                                size_t head_width, T scale, T* s) {
  ForSegmentRows(first, second, begin, begin + n,
                 [&](auto keys, auto, size_t stride, size_t count, size_t p) {
                   ScoreKeys(d, q, keys, stride, count, head_width, scale, s + (p - begin));
                 });
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
        hn::IfThenElseZero(tail, hn::Exp(d, hn::Sub(MaskedLoadInBounds(tail, d, s + i), shift)));
    hn::BlendedStore(e, tail, d, s + i);
    sum = hn::Add(sum, e);
  }
}

// Columns [col, col + kVecs·lanes) of the value mix for tile rows [begin,
// begin + n) with weights e[0, n): the even-p and odd-p accumulators are loaded
// from memory, advanced in ascending p and stored back, so a tile boundary is
// invisible to the arithmetic. With kMaskedLast the last vector is masked.
template <size_t kVecs, bool kMaskedLast, class D, class K, typename T = hn::TFromD<D>>
HWY_INLINE void MixTileColumns(D d, const T* e, const PrefixSegment<K>& first,
                               const PrefixSegment<K>& second, size_t begin, size_t n, size_t col,
                               hn::Mask<D> tail, T* even, T* odd) {
  const size_t lanes = hn::Lanes(d);
  // The accumulators (T) and the value rows (K) load alike: whole vectors, the
  // last one masked.
  const auto load = [&](auto row, size_t v) {
    if (kMaskedLast && v + 1 == kVecs) return LoadKvTail(tail, d, row + v * lanes);
    return LoadKv(d, row + v * lanes);
  };
  hn::Vec<D> ev[kVecs];
  hn::Vec<D> od[kVecs];
  for (size_t v = 0; v < kVecs; ++v) {
    ev[v] = load(even + col, v);
    od[v] = load(odd + col, v);
  }
  ForSegmentRows(first, second, begin, begin + n,
                 [&](auto, auto values, size_t stride, size_t count, size_t p0) {
                   ForEachParity(p0, p0 + count, [&](size_t p, auto is_odd) {
                     hn::Vec<D>* acc = decltype(is_odd)::value ? od : ev;
                     const auto w = hn::Set(d, e[p - begin]);
                     const auto row = values + (p - p0) * stride + col;
                     for (size_t v = 0; v < kVecs; ++v) acc[v] = hn::MulAdd(w, load(row, v), acc[v]);
                   });
                 });
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
template <class D, class K, typename T = hn::TFromD<D>>
HWY_INLINE void MixTile(D d, const T* e, const PrefixSegment<K>& first,
                        const PrefixSegment<K>& second, size_t begin, size_t n, size_t head_width,
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
        hn::Add(MaskedLoadInBounds(tail, d, even + j), MaskedLoadInBounds(tail, d, odd + j));
    hn::BlendedStore(hn::Mul(mixed, reciprocal), tail, d, out + j);
  }
}

template <class D, class K, typename T = hn::TFromD<D>>
HWY_INLINE void AttendPrefixRow(D d, const T* q, const PrefixSegment<K>& first,
                                const PrefixSegment<K>& second, size_t head_width, T scale,
                                T* scratch, T* out) {
  constexpr size_t kTile = kPrefixAttentionTile;
  const size_t n = first.count + second.count;
  if (n == 0) {
    std::fill_n(out, head_width, T(0));
    return;
  }
  T* s = scratch;  // every score of the prefix, s[p]
  T* even = scratch + PrefixAttentionScores(n);
  T* odd = even + head_width;
  // Pass 1: the scores, each key read once, and their maximum (order-free, hence exact).
  T max_value = -std::numeric_limits<T>::infinity();
  for (size_t begin = 0; begin < n; begin += kTile) {
    const size_t count = std::min(kTile, n - begin);
    ScorePrefixTile(d, q, first, second, begin, count, head_width, scale, s + begin);
    max_value = std::max(max_value, RowMax(d, s + begin, count));
  }
  // Pass 2: exps, their sum and the value mix, carried across tiles.
  std::fill_n(even, 2 * head_width, T(0));
  auto sum = hn::Zero(d);
  for (size_t begin = 0; begin < n; begin += kTile) {
    const size_t count = std::min(kTile, n - begin);
    ExpTile(d, s + begin, count, max_value, sum);
    MixTile(d, s + begin, first, second, begin, count, head_width, even, odd);
  }
  FinishRow(d, even, odd, sum, head_width, out);
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_PREFIX_ATTENTION_INL_H_ toggle
