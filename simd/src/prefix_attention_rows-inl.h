// Per-target body of AttendPrefixRows (prefix_attention.h): kPrefixAttentionRows
// consecutive queries of one head at once, each computed exactly as AttendPrefixRow
// computes it alone. The queries share only the loads of the K and V rows they all
// see; every accumulator, every reduction tree and every exp is the lone query's.
#if defined(KVRT_SIMD_PREFIX_ATTENTION_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_PREFIX_ATTENTION_ROWS_INL_H_
#undef KVRT_SIMD_PREFIX_ATTENTION_ROWS_INL_H_
#else
#define KVRT_SIMD_PREFIX_ATTENTION_ROWS_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <limits>
#include <type_traits>

#include "attention_scores-inl.h"
#include "hwy/highway.h"
#include "kv_load-inl.h"
#include "masked_load-inl.h"
#include "kvrt/simd/prefix_attention.h"
#include "prefix_attention-inl.h"
#include "softmax-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

inline constexpr size_t kRowGroup = kPrefixAttentionRows;

// The first `count` rows of a prefix, as segments.
template <class T>
struct PrefixHead {
  PrefixSegment<T> first, second;
};
template <class T>
HWY_INLINE PrefixHead<T> FirstRows(PrefixSegment<T> first, PrefixSegment<T> second, size_t count) {
  first.count = std::min(first.count, count);
  second.count = count - first.count;
  return {first, second};
}

// Keys a score group takes: kRowGroup × kKeys accumulators (16 on AVX-512, 8 on
// 16-register targets) plus the key and query vectors.
template <class D>
constexpr size_t RowScoreKeys() {
  return HWY_MAX_BYTES >= 64 ? 4 : 2;
}

// Scores of kKeys keys for each query: s[r][p + j]. Every accumulator is the chain
// AccumulateKeyGroup builds for one query and key, reduced by SumOfScoreLanes' tree.
template <size_t kKeys, class D, class KP, typename T = hn::TFromD<D>>
HWY_INLINE void ScoreRowsKeyGroup(D d, const T* const* q, KP key, size_t key_stride,
                                  size_t head_width, T scale, T* const* s, size_t p) {
  const size_t lanes = hn::Lanes(d);
  hn::Vec<D> acc[kRowGroup][kKeys];
  for (size_t r = 0; r < kRowGroup; ++r) {
    for (size_t j = 0; j < kKeys; ++j) acc[r][j] = hn::Zero(d);
  }
  // `load` takes a query (T) or a key (K) row.
  const auto step = [&](size_t i, auto load) {
    hn::Vec<D> keys[kKeys];
    for (size_t j = 0; j < kKeys; ++j) keys[j] = load(key + j * key_stride + i);
    for (size_t r = 0; r < kRowGroup; ++r) {
      const auto query = load(q[r] + i);
      for (size_t j = 0; j < kKeys; ++j) acc[r][j] = hn::MulAdd(query, keys[j], acc[r][j]);
    }
  };
  size_t i = 0;
  for (; i + lanes <= head_width; i += lanes) step(i, [&](auto at) { return LoadKv(d, at); });
  if (i < head_width) {
    const auto tail = hn::FirstN(d, head_width - i);
    step(i, [&](auto at) { return LoadKvTail(tail, d, at); });
  }
#if HWY_TARGET == HWY_AVX3
  if constexpr (std::is_same_v<T, float> && kRowGroup * kKeys == 16) {
    __m512 raw[16];
    for (size_t r = 0; r < kRowGroup; ++r) {
      for (size_t j = 0; j < kKeys; ++j) raw[r * kKeys + j] = acc[r][j].raw;
    }
    const __m512 scores = _mm512_mul_ps(SumOf16Lanes(raw), _mm512_set1_ps(scale));
    _mm_storeu_ps(s[0] + p, _mm512_castps512_ps128(scores));
    _mm_storeu_ps(s[1] + p, _mm512_extractf32x4_ps(scores, 1));
    _mm_storeu_ps(s[2] + p, _mm512_extractf32x4_ps(scores, 2));
    _mm_storeu_ps(s[3] + p, _mm512_extractf32x4_ps(scores, 3));
    return;
  }
#endif
  for (size_t r = 0; r < kRowGroup; ++r) {
    for (size_t j = 0; j < kKeys; ++j) s[r][p + j] = SumOfScoreLanes(d, acc[r][j]) * scale;
  }
}

// Columns [col, col + kVecs·lanes) of every query's value mix over prefix rows
// [begin, begin + n), weights e[r][p − begin]: the even-p and odd-p chains of
// MixTileColumns, one value load serving every query.
template <size_t kVecs, bool kMaskedLast, class D, class K, typename T = hn::TFromD<D>>
HWY_INLINE void MixRowsColumns(D d, const T* const* e, const PrefixSegment<K>& first,
                               const PrefixSegment<K>& second, size_t begin, size_t n,
                               size_t col, hn::Mask<D> tail, T* const* even, T* const* odd) {
  const size_t lanes = hn::Lanes(d);
  // An accumulator (T) or a value row (K).
  const auto load = [&](auto row, size_t v) {
    if (kMaskedLast && v + 1 == kVecs) return LoadKvTail(tail, d, row + v * lanes);
    return LoadKv(d, row + v * lanes);
  };
  hn::Vec<D> ev[kRowGroup][kVecs];
  hn::Vec<D> od[kRowGroup][kVecs];
  for (size_t r = 0; r < kRowGroup; ++r) {
    for (size_t v = 0; v < kVecs; ++v) {
      ev[r][v] = load(even[r] + col, v);
      od[r][v] = load(odd[r] + col, v);
    }
  }
  ForSegmentRows(first, second, begin, begin + n,
                 [&](auto, auto values, size_t stride, size_t count, size_t p0) {
                   ForEachParity(p0, p0 + count, [&](size_t p, auto is_odd) {
                     hn::Vec<D>(*acc)[kVecs] = decltype(is_odd)::value ? od : ev;
                     const auto row = values + (p - p0) * stride + col;
                     hn::Vec<D> value[kVecs];
                     for (size_t v = 0; v < kVecs; ++v) value[v] = load(row, v);
                     for (size_t r = 0; r < kRowGroup; ++r) {
                       const auto w = hn::Set(d, e[r][p - begin]);
                       for (size_t v = 0; v < kVecs; ++v) acc[r][v] = hn::MulAdd(w, value[v], acc[r][v]);
                     }
                   });
                 });
  for (size_t r = 0; r < kRowGroup; ++r) {
    for (size_t v = 0; v < kVecs; ++v) {
      if (kMaskedLast && v + 1 == kVecs) {
        hn::BlendedStore(ev[r][v], tail, d, even[r] + col + v * lanes);
        hn::BlendedStore(od[r][v], tail, d, odd[r] + col + v * lanes);
      } else {
        hn::StoreU(ev[r][v], d, even[r] + col + v * lanes);
        hn::StoreU(od[r][v], d, odd[r] + col + v * lanes);
      }
    }
  }
}

// Every query's mix over the rows [begin, begin + n) they all see, in column blocks
// of kVecs vectors (2 on AVX-512: 16 accumulators), the last one masked.
template <class D, class K, typename T = hn::TFromD<D>>
HWY_INLINE void MixRows(D d, const T* const* e, const PrefixSegment<K>& first,
                        const PrefixSegment<K>& second, size_t begin, size_t n, size_t head_width,
                        T* const* even, T* const* odd) {
  constexpr size_t kVecs = HWY_MAX_BYTES >= 64 ? 2 : 1;
  const size_t lanes = hn::Lanes(d);
  const auto all = hn::FirstN(d, lanes);
  size_t col = 0;
  for (; col + kVecs * lanes <= head_width; col += kVecs * lanes) {
    MixRowsColumns<kVecs, false>(d, e, first, second, begin, n, col, all, even, odd);
  }
  const size_t rest = head_width - col;
  if (rest == 0) return;
  const size_t full = rest / lanes, partial = rest % lanes;
  const auto tail = hn::FirstN(d, partial);
  if (partial == 0) return MixRowsColumns<1, false>(d, e, first, second, begin, n, col, all, even, odd);
  if (full == 0) return MixRowsColumns<1, true>(d, e, first, second, begin, n, col, tail, even, odd);
  return MixRowsColumns<2, true>(d, e, first, second, begin, n, col, tail, even, odd);
}

// Rows of the tile [begin, begin + kPrefixAttentionTile) that a query over the first
// `count` prefix rows sees: its own tile's count, 0 past its prefix.
inline size_t TileRows(size_t count, size_t begin) {
  return count > begin ? std::min(kPrefixAttentionTile, count - begin) : 0;
}

// Scores of the tile at `begin` for the four queries, s[r][p − begin]: the rows they
// all see (p < shared) in groups of kKeys keys (a segment's last few one query at a
// time), then each query's own last rows (query r sees count[r] = shared + r rows).
template <class D, class K, typename T = hn::TFromD<D>>
HWY_INLINE void ScoreRowGroupTile(D d, const T* const* queries, const PrefixSegment<K>& first,
                                  const PrefixSegment<K>& second, size_t shared,
                                  const size_t* count, size_t begin, size_t head_width, T scale,
                                  T* const* s) {
  constexpr size_t kKeys = RowScoreKeys<D>();
  ForSegmentRows(first, second, begin, std::min(shared, begin + kPrefixAttentionTile),
                 [&](auto keys, auto, size_t stride, size_t rows, size_t p) {
                   const size_t at = p - begin;
                   size_t j = 0;
                   for (; j + kKeys <= rows; j += kKeys) {
                     ScoreRowsKeyGroup<kKeys>(d, queries, keys + j * stride, stride, head_width, scale, s, at + j);
                   }
                   for (size_t r = 0; r < kRowGroup && j < rows; ++r) {
                     ScoreKeys(d, queries[r], keys + j * stride, stride, rows - j, head_width, scale, s[r] + at + j);
                   }
                 });
  for (size_t r = 0; r < kRowGroup; ++r) {
    ForSegmentRows(first, second, std::max(begin, shared), begin + TileRows(count[r], begin),
                   [&](auto keys, auto, size_t stride, size_t rows, size_t p) {
                     ScoreKeys(d, queries[r], keys, stride, rows, head_width, scale, s[r] + (p - begin));
                   });
  }
}

// Four consecutive queries, the last over the whole prefix of n rows, query r over
// its first n − 3 + r: AttendPrefixRow's passes, tile by tile (every query's scores,
// kept, and their max; then the exps and the value mix), each query on its own
// scratch, the rows all four see walked once for all of them. Every tile starts at
// the same multiple of the tile size as in AttendPrefixRow, so each query's exp sum
// and value chains are its lone ones. The passes are taken a tile at a time
// (ScoreTile, then MixTile from the first tile on), so that several groups can walk
// one prefix side by side. The steps are forced inline: left to GCC, the value mix
// went out of line and the walk ran slower than one group at a time.
template <class D, class K, typename T = hn::TFromD<D>>
class RowGroupWalk {
 public:
  RowGroupWalk() = default;
  RowGroupWalk(D d, const T* q, size_t q_stride, const PrefixSegment<K>& first, const PrefixSegment<K>& second,
               size_t head_width, T* scratch)
      : first_(first), second_(second), n_(first.count + second.count), shared_(n_ - (kRowGroup - 1)) {
    const size_t per_row = PrefixAttentionScratch(head_width, n_);
    for (size_t r = 0; r < kRowGroup; ++r) {
      queries_[r] = q + r * q_stride;
      s_[r] = scratch + r * per_row;
      even_[r] = s_[r] + PrefixAttentionScores(n_);
      odd_[r] = even_[r] + head_width;
      count_[r] = shared_ + r;
      max_value_[r] = -std::numeric_limits<T>::infinity();
      sum_[r] = hn::Zero(d);
    }
  }

  // Rows the group's last query sees.
  size_t prefix() const { return n_; }

  // Pass 1 for the tile at `begin`: every query's scores, each key read once for all
  // four, and their maximum (order-free).
  HWY_INLINE void ScoreTile(D d, size_t begin, size_t head_width, T scale) {
    if (begin >= n_) return;
    T* tile[kRowGroup];
    AtTile(begin, tile);
    ScoreRowGroupTile(d, queries_, first_, second_, shared_, count_, begin, head_width, scale, tile);
    for (size_t r = 0; r < kRowGroup; ++r) {
      const size_t rows = TileRows(count_[r], begin);
      if (rows > 0) max_value_[r] = std::max(max_value_[r], RowMax(d, tile[r], rows));
    }
  }

  // Pass 2 for the tile at `begin` (after pass 1 of every tile; tiles in ascending
  // order): exps, their sums and the value mix, carried across tiles: the rows all
  // four see for all of them, then each query's own last rows.
  HWY_INLINE void MixTile(D d, size_t begin, size_t head_width) {
    if (begin == 0) {
      for (size_t r = 0; r < kRowGroup; ++r) std::fill_n(even_[r], 2 * head_width, T(0));
    }
    if (begin >= n_) return;
    T* tile[kRowGroup];
    AtTile(begin, tile);
    size_t end[kRowGroup];  // where each query's rows in this tile stop
    for (size_t r = 0; r < kRowGroup; ++r) {
      const size_t rows = TileRows(count_[r], begin);
      ExpTile(d, tile[r], rows, max_value_[r], sum_[r]);
      end[r] = begin + rows;
    }
    const size_t shared_end = std::min(shared_, begin + kPrefixAttentionTile);
    if (begin < shared_end) MixRows(d, tile, first_, second_, begin, shared_end - begin, head_width, even_, odd_);
    const size_t own = std::max(begin, shared_);
    for (size_t r = 0; r < kRowGroup; ++r) {
      if (own < end[r]) {
        HWY_NAMESPACE::MixTile(d, tile[r] + (own - begin), first_, second_, own, end[r] - own, head_width, even_[r],
                               odd_[r]);
      }
    }
  }

  HWY_INLINE void Finish(D d, size_t head_width, T* out, size_t out_stride) const {
    for (size_t r = 0; r < kRowGroup; ++r) FinishRow(d, even_[r], odd_[r], sum_[r], head_width, out + r * out_stride);
  }

 private:
  void AtTile(size_t begin, T** tile) const {
    for (size_t r = 0; r < kRowGroup; ++r) tile[r] = s_[r] + begin;
  }

  PrefixSegment<K> first_{}, second_{};
  size_t n_ = 0, shared_ = 0;
  const T* queries_[kRowGroup] = {};
  T* s_[kRowGroup] = {};  // query r's scores of the whole prefix
  T* even_[kRowGroup] = {};
  T* odd_[kRowGroup] = {};
  size_t count_[kRowGroup] = {};
  T max_value_[kRowGroup] = {};
  hn::Vec<D> sum_[kRowGroup];
};

// Queries [0, rows): groups of four, up to PrefixAttentionGroupsAtOnce of them
// walking the prefix together, tile by tile; then the rest alone.
template <class D, class K, typename T = hn::TFromD<D>>
HWY_INLINE void AttendPrefixRowRange(D d, const T* q, size_t q_stride, size_t rows,
                                     const PrefixSegment<K>& first, const PrefixSegment<K>& second,
                                     size_t head_width, T scale, T* scratch, T* out,
                                     size_t out_stride) {
  constexpr size_t kMostGroups = kPrefixAttentionBlockRows / kRowGroup;
  const size_t n = first.count + second.count, groups = rows / kRowGroup;
  const size_t at_once = PrefixAttentionGroupsAtOnce(head_width, n);
  const size_t group_scratch = kRowGroup * PrefixAttentionScratch(head_width, n);
  for (size_t g0 = 0; g0 < groups; g0 += at_once) {
    const size_t count = std::min(at_once, groups - g0);
    RowGroupWalk<D, K> walks[kMostGroups];
    for (size_t g = 0; g < count; ++g) {
      const size_t r = (g0 + g) * kRowGroup;
      const size_t last = n - (rows - (r + kRowGroup));  // rows the group's last query sees
      const PrefixHead<K> head = FirstRows(first, second, last);
      walks[g] = RowGroupWalk<D, K>(d, q + r * q_stride, q_stride, head.first, head.second, head_width,
                                    scratch + g * group_scratch);
    }
    const size_t longest = walks[count - 1].prefix();
    for (size_t begin = 0; begin < longest; begin += kPrefixAttentionTile) {
      for (size_t g = 0; g < count; ++g) walks[g].ScoreTile(d, begin, head_width, scale);
    }
    for (size_t begin = 0; begin < longest; begin += kPrefixAttentionTile) {
      for (size_t g = 0; g < count; ++g) walks[g].MixTile(d, begin, head_width);
    }
    for (size_t g = 0; g < count; ++g) {
      walks[g].Finish(d, head_width, out + (g0 + g) * kRowGroup * out_stride, out_stride);
    }
  }
  for (size_t r = groups * kRowGroup; r < rows; ++r) {
    const PrefixHead<K> head = FirstRows(first, second, n - (rows - 1 - r));
    AttendPrefixRow(d, q + r * q_stride, head.first, head.second, head_width, scale, scratch,
                    out + r * out_stride);
  }
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_PREFIX_ATTENTION_ROWS_INL_H_ toggle
