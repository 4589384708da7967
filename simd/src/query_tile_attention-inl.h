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

// Columns [col, col + kCols) of the value mix of one key tile: acc_c = acc_c·α,
// then acc_c += e_k · value_k[c] in ascending k, for every query lane at once.
template <size_t kCols, class D, typename T = hn::TFromD<D>>
HWY_INLINE void MixColumns(D d, const T* const* values, size_t keys, const T* e, hn::Vec<D> alpha, size_t col,
                           T* acc_t) {
  const size_t lanes = hn::Lanes(d);
  hn::Vec<D> acc[kCols];
  for (size_t c = 0; c < kCols; ++c) acc[c] = hn::Mul(hn::LoadU(d, acc_t + (col + c) * lanes), alpha);
  for (size_t k = 0; k < keys; ++k) {
    const auto weight = hn::LoadU(d, e + k * lanes);
    const T* value = values[k] + col;
    for (size_t c = 0; c < kCols; ++c) acc[c] = hn::MulAdd(weight, hn::Set(d, value[c]), acc[c]);
  }
  for (size_t c = 0; c < kCols; ++c) hn::StoreU(acc[c], d, acc_t + (col + c) * lanes);
}

// Queries [first_query, first_query + count) of the call, count ≤ lanes, one
// per lane; lane l sees `base + l` prefix rows.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void AttendLaneGroup(D d, const T* q, size_t q_stride, size_t count, const PrefixSegment<T>& first,
                                const PrefixSegment<T>& second, size_t base, size_t head_width, T scale,
                                T* scratch, T* out, size_t out_stride) {
  constexpr size_t kKeys = kQueryTileKeys;
  const size_t lanes = hn::Lanes(d);
  const size_t hw = head_width;
  T* q_t = scratch;                        // [hw, lanes]: q_l[i] in lane l
  T* acc_t = q_t + hw * lanes;             // [hw, lanes]: the value accumulators
  T* e = acc_t + hw * lanes;               // [kKeys, lanes]: the tile's exps
  for (size_t i = 0; i < hw; ++i) {
    for (size_t l = 0; l < lanes; ++l) q_t[i * lanes + l] = l < count ? q[l * q_stride + i] : T(0);
  }
  std::fill_n(acc_t, hw * lanes, T(0));
  const T lowest = -std::numeric_limits<T>::infinity();
  const auto minus_inf = hn::Set(d, lowest);
  const auto one = hn::Set(d, T(1));
  const auto zero = hn::Zero(d);
  const auto used = hn::FirstN(d, count);
  auto running_max = minus_inf;
  auto sum = zero;
  const size_t last = base + count - 1;  // rows the last lane sees
  const T* key_rows[kKeys];
  const T* value_rows[kKeys];
  for (size_t begin = 0; begin < last; begin += kKeys) {
    const size_t keys = std::min(kKeys, last - begin);
    // Past the tile's keys: the last key again, masked out below.
    for (size_t k = 0; k < kKeys; ++k) {
      const size_t p = begin + std::min(k, keys - 1);
      key_rows[k] = PrefixRow(first, second, true, p);
      value_rows[k] = PrefixRow(first, second, false, p);
    }
    // Scores: one FMA chain per key over the head, queries in lanes.
    hn::Vec<D> s[kKeys];
    for (size_t k = 0; k < kKeys; ++k) s[k] = zero;
    for (size_t i = 0; i < hw; ++i) {
      const auto query = hn::LoadU(d, q_t + i * lanes);
      for (size_t k = 0; k < kKeys; ++k) s[k] = hn::MulAdd(hn::Set(d, key_rows[k][i]), query, s[k]);
    }
    // Key p is visible to lane l iff p < base + l, i.e. l ≥ p + 1 − base.
    auto tile_max = minus_inf;
    hn::Mask<D> visible[kKeys];
    for (size_t k = 0; k < kKeys; ++k) {
      const size_t p = begin + k;
      visible[k] = k >= keys ? hn::FirstN(d, 0)
                   : p < base ? used
                              : hn::AndNot(hn::FirstN(d, p + 1 - base), used);
      s[k] = hn::IfThenElse(visible[k], hn::Mul(s[k], hn::Set(d, scale)), minus_inf);
      tile_max = hn::Max(tile_max, s[k]);
    }
    // α = exp(m_old − m_new): exactly 1 where the max did not move, 0 where
    // nothing was accumulated yet.
    const auto new_max = hn::Max(running_max, tile_max);
    const auto unseen = hn::Eq(running_max, minus_inf);
    const auto shift_arg = hn::IfThenElse(unseen, zero, hn::Sub(running_max, new_max));
    const auto alpha =
        hn::IfThenElse(hn::Eq(running_max, new_max), one, hn::IfThenElseZero(hn::Not(unseen), hn::Exp(d, shift_arg)));
    running_max = new_max;
    const auto shift = hn::IfThenElse(hn::Eq(new_max, minus_inf), zero, new_max);
    sum = hn::Mul(sum, alpha);
    for (size_t k = 0; k < keys; ++k) {
      // Hidden lanes are shifted to exp(0) and then zeroed: no out-of-range Exp.
      const auto x = hn::Sub(hn::IfThenElse(visible[k], s[k], shift), shift);
      const auto weight = hn::IfThenElseZero(visible[k], hn::Exp(d, x));
      hn::StoreU(weight, d, e + k * lanes);
      sum = hn::Add(sum, weight);
    }
    size_t col = 0;
    for (; col + 8 <= hw; col += 8) MixColumns<8>(d, value_rows, keys, e, alpha, col, acc_t);
    for (; col + 4 <= hw; col += 4) MixColumns<4>(d, value_rows, keys, e, alpha, col, acc_t);
    for (; col < hw; ++col) MixColumns<1>(d, value_rows, keys, e, alpha, col, acc_t);
  }
  // out = acc · (1 / Σ exps), lane l to query l's row.
  const auto reciprocal = hn::Div(one, hn::IfThenElse(used, sum, one));
  T* row = e;  // the exps are spent: one transposed output column at a time
  for (size_t i = 0; i < hw; ++i) {
    hn::StoreU(hn::Mul(hn::LoadU(d, acc_t + i * lanes), reciprocal), d, row);
    for (size_t l = 0; l < count; ++l) out[l * out_stride + i] = row[l];
  }
}

template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void AttendQueryTileRows(D d, const T* q, size_t q_stride, size_t queries,
                                    const PrefixSegment<T>& first, const PrefixSegment<T>& second,
                                    size_t head_width, T scale, T* scratch, T* out, size_t out_stride) {
  const size_t lanes = hn::Lanes(d);
  const size_t n = first.count + second.count;
  for (size_t begin = 0; begin < queries; begin += lanes) {
    const size_t count = std::min(lanes, queries - begin);
    const size_t base = n - (queries - 1 - begin);  // rows query `begin` sees
    AttendLaneGroup(d, q + begin * q_stride, q_stride, count, first, second, base, head_width, scale, scratch,
                    out + begin * out_stride, out_stride);
  }
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_QUERY_TILE_ATTENTION_INL_H_ toggle
