// Per-target body of AttendQueryTile (query_tile_attention.h).
#if defined(KVRT_SIMD_QUERY_TILE_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_QUERY_TILE_ATTENTION_INL_H_
#undef KVRT_SIMD_QUERY_TILE_ATTENTION_INL_H_
#else
#define KVRT_SIMD_QUERY_TILE_ATTENTION_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <limits>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kvrt/simd/query_tile_attention.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class T>
const T* PrefixRow(const PrefixSegment<T>& first, const PrefixSegment<T>& second, bool keys, size_t p) {
  return p < first.count ? (keys ? first.keys : first.values) + p * first.stride
                         : (keys ? second.keys : second.values) + (p - first.count) * second.stride;
}

// One lane group: `count` queries, lane l seeing `base + l` prefix rows, with
// its transposed queries, accumulators and the running max and sum.
template <class D, typename T = hn::TFromD<D>>
struct LaneGroup {
  size_t count = 0;
  size_t base = 0;
  T* q_t = nullptr;    // [hw, lanes]: q_l[i] in lane l
  T* acc_t = nullptr;  // [hw, lanes]: the value accumulators
  T* s = nullptr;      // [kQueryTileKeys, lanes]: the tile's scores, then exps
  hn::Vec<D> running_max;
  hn::Vec<D> sum;
  hn::Vec<D> alpha;
};

// Scores of keys [k0, k0 + kKeys) of the tile for every group: each key element
// is broadcast once and multiplied into every group's queries (kGroups·kKeys
// independent FMA chains over the head).
template <size_t kGroups, size_t kKeys, class D, typename T = hn::TFromD<D>>
HWY_INLINE void ScoreKeys(D d, LaneGroup<D>* groups, const T* const* key_rows, size_t k0, size_t hw) {
  const size_t lanes = hn::Lanes(d);
  hn::Vec<D> s[kGroups][kKeys];
  for (size_t g = 0; g < kGroups; ++g) {
    for (size_t k = 0; k < kKeys; ++k) s[g][k] = hn::Zero(d);
  }
  for (size_t i = 0; i < hw; ++i) {
    hn::Vec<D> query[kGroups];
    for (size_t g = 0; g < kGroups; ++g) query[g] = hn::LoadU(d, groups[g].q_t + i * lanes);
    for (size_t k = 0; k < kKeys; ++k) {
      const auto key = hn::Set(d, key_rows[k0 + k][i]);
      for (size_t g = 0; g < kGroups; ++g) s[g][k] = hn::MulAdd(key, query[g], s[g][k]);
    }
  }
  for (size_t g = 0; g < kGroups; ++g) {
    for (size_t k = 0; k < kKeys; ++k) hn::StoreU(s[g][k], d, groups[g].s + (k0 + k) * lanes);
  }
}

// Columns [col, col + kCols) of every group's value mix of one key tile:
// acc_c = acc_c·α, then acc_c += e_k · value_k[c] in ascending k.
template <size_t kGroups, size_t kCols, class D, typename T = hn::TFromD<D>>
HWY_INLINE void MixColumns(D d, LaneGroup<D>* groups, const T* const* value_rows, size_t keys, size_t col) {
  const size_t lanes = hn::Lanes(d);
  hn::Vec<D> acc[kGroups][kCols];
  for (size_t g = 0; g < kGroups; ++g) {
    for (size_t c = 0; c < kCols; ++c) {
      acc[g][c] = hn::Mul(hn::LoadU(d, groups[g].acc_t + (col + c) * lanes), groups[g].alpha);
    }
  }
  for (size_t k = 0; k < keys; ++k) {
    hn::Vec<D> weight[kGroups];
    for (size_t g = 0; g < kGroups; ++g) weight[g] = hn::LoadU(d, groups[g].s + k * lanes);
    const T* value = value_rows[k] + col;
    for (size_t c = 0; c < kCols; ++c) {
      const auto v = hn::Set(d, value[c]);
      for (size_t g = 0; g < kGroups; ++g) acc[g][c] = hn::MulAdd(weight[g], v, acc[g][c]);
    }
  }
  for (size_t g = 0; g < kGroups; ++g) {
    for (size_t c = 0; c < kCols; ++c) hn::StoreU(acc[g][c], d, groups[g].acc_t + (col + c) * lanes);
  }
}

// Online-softmax step of one group over the tile's `keys` scores (rows
// [begin, begin + keys)): mask, max, α, exps (over the scores) and the sum.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void SoftmaxStep(D d, LaneGroup<D>& group, size_t begin, size_t keys, T scale) {
  const size_t lanes = hn::Lanes(d);
  const auto minus_inf = hn::Set(d, -std::numeric_limits<T>::infinity());
  const auto zero = hn::Zero(d);
  const auto used = hn::FirstN(d, group.count);
  // Key p is visible to lane l iff p < base + l, i.e. l ≥ p + 1 − base.
  const auto visible = [&](size_t k) {
    const size_t p = begin + k;
    return p < group.base ? used : hn::AndNot(hn::FirstN(d, p + 1 - group.base), used);
  };
  auto tile_max = minus_inf;
  for (size_t k = 0; k < keys; ++k) {
    const auto scores = hn::IfThenElse(visible(k), hn::Mul(hn::LoadU(d, group.s + k * lanes), hn::Set(d, scale)),
                                       minus_inf);
    hn::StoreU(scores, d, group.s + k * lanes);
    tile_max = hn::Max(tile_max, scores);
  }
  // α = exp(m_old − m_new): exactly 1 where the max did not move, 0 where
  // nothing was accumulated yet.
  const auto new_max = hn::Max(group.running_max, tile_max);
  const auto unseen = hn::Eq(group.running_max, minus_inf);
  const auto shift_arg = hn::IfThenElse(unseen, zero, hn::Sub(group.running_max, new_max));
  group.alpha = hn::IfThenElse(hn::Eq(group.running_max, new_max), hn::Set(d, T(1)),
                               hn::IfThenElseZero(hn::Not(unseen), hn::Exp(d, shift_arg)));
  group.running_max = new_max;
  const auto shift = hn::IfThenElse(hn::Eq(new_max, minus_inf), zero, new_max);
  group.sum = hn::Mul(group.sum, group.alpha);
  for (size_t k = 0; k < keys; ++k) {
    // Hidden lanes are shifted to exp(0) and then zeroed: no out-of-range Exp.
    const auto mask = visible(k);
    const auto x = hn::Sub(hn::IfThenElse(mask, hn::LoadU(d, group.s + k * lanes), shift), shift);
    const auto weight = hn::IfThenElseZero(mask, hn::Exp(d, x));
    hn::StoreU(weight, d, group.s + k * lanes);
    group.sum = hn::Add(group.sum, weight);
  }
}

// kGroups lane groups of queries over the keys the last of them sees.
template <size_t kGroups, class D, typename T = hn::TFromD<D>>
HWY_INLINE void AttendLaneGroups(D d, const T* q, size_t q_stride, LaneGroup<D>* groups,
                                 const PrefixSegment<T>& first, const PrefixSegment<T>& second, size_t hw,
                                 T scale, T* out, size_t out_stride) {
  constexpr size_t kKeys = kQueryTileKeys;
  const size_t lanes = hn::Lanes(d);
  for (size_t g = 0; g < kGroups; ++g) {
    LaneGroup<D>& group = groups[g];
    const T* rows = q + g * lanes * q_stride;
    for (size_t i = 0; i < hw; ++i) {
      for (size_t l = 0; l < lanes; ++l) group.q_t[i * lanes + l] = l < group.count ? rows[l * q_stride + i] : T(0);
    }
    std::fill_n(group.acc_t, hw * lanes, T(0));
    group.running_max = hn::Set(d, -std::numeric_limits<T>::infinity());
    group.sum = hn::Zero(d);
  }
  const LaneGroup<D>& last_group = groups[kGroups - 1];
  const size_t last = last_group.base + last_group.count - 1;  // rows the last lane sees
  const T* key_rows[kKeys];
  const T* value_rows[kKeys];
  for (size_t begin = 0; begin < last; begin += kKeys) {
    const size_t keys = std::min(kKeys, last - begin);
    // Past the tile's keys: the last key again, its scores never used.
    for (size_t k = 0; k < kKeys; ++k) {
      const size_t p = begin + std::min(k, keys - 1);
      key_rows[k] = PrefixRow(first, second, true, p);
      value_rows[k] = PrefixRow(first, second, false, p);
    }
    // Two halves keep kGroups·8 score chains in registers.
    ScoreKeys<kGroups, kKeys / 2>(d, groups, key_rows, 0, hw);
    if (keys > kKeys / 2) ScoreKeys<kGroups, kKeys / 2>(d, groups, key_rows, kKeys / 2, hw);
    for (size_t g = 0; g < kGroups; ++g) SoftmaxStep(d, groups[g], begin, keys, scale);
    size_t col = 0;
    for (; col + 8 <= hw; col += 8) MixColumns<kGroups, 8>(d, groups, value_rows, keys, col);
    for (; col + 4 <= hw; col += 4) MixColumns<kGroups, 4>(d, groups, value_rows, keys, col);
    for (; col < hw; ++col) MixColumns<kGroups, 1>(d, groups, value_rows, keys, col);
  }
  // out = acc · (1 / sum), lane l to query l's row.
  for (size_t g = 0; g < kGroups; ++g) {
    LaneGroup<D>& group = groups[g];
    const auto one = hn::Set(d, T(1));
    const auto reciprocal = hn::Div(one, hn::IfThenElse(hn::FirstN(d, group.count), group.sum, one));
    T* row = group.s;  // the exps are spent: one transposed output column at a time
    T* o = out + g * lanes * out_stride;
    for (size_t i = 0; i < hw; ++i) {
      hn::StoreU(hn::Mul(hn::LoadU(d, group.acc_t + i * lanes), reciprocal), d, row);
      for (size_t l = 0; l < group.count; ++l) o[l * out_stride + i] = row[l];
    }
  }
}

template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void AttendQueryTileRows(D d, const T* q, size_t q_stride, size_t queries,
                                    const PrefixSegment<T>& first, const PrefixSegment<T>& second,
                                    size_t head_width, T scale, T* scratch, T* out, size_t out_stride) {
  constexpr size_t kGroups = 2;
  const size_t lanes = hn::Lanes(d);
  const size_t n = first.count + second.count;
  LaneGroup<D> groups[kGroups];
  for (size_t g = 0; g < kGroups; ++g) {
    T* own = scratch + g * (2 * head_width * kQueryTileMaxLanes + kQueryTileKeys * kQueryTileMaxLanes);
    groups[g].q_t = own;
    groups[g].acc_t = own + head_width * lanes;
    groups[g].s = own + 2 * head_width * lanes;
  }
  for (size_t begin = 0; begin < queries;) {
    // Two lane groups share every key and value load while two are left.
    const size_t take = queries - begin >= 2 * lanes ? 2 : 1;
    for (size_t g = 0; g < take; ++g) {
      const size_t start = begin + g * lanes;
      groups[g].count = std::min(lanes, queries - start);
      groups[g].base = n - (queries - 1 - start);  // rows query `start` sees
    }
    const T* rows = q + begin * q_stride;
    T* o = out + begin * out_stride;
    if (take == 2) {
      AttendLaneGroups<2>(d, rows, q_stride, groups, first, second, head_width, scale, o, out_stride);
    } else {
      AttendLaneGroups<1>(d, rows, q_stride, groups, first, second, head_width, scale, o, out_stride);
    }
    begin += take == 2 ? 2 * lanes : groups[0].count;
  }
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_QUERY_TILE_ATTENTION_INL_H_ toggle
