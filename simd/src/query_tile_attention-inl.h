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

// Queries whose scores and value mix run together: kQueryGroup independent FMA
// chains hide the FMA latency, and every key or value vector loaded serves them all.
inline constexpr size_t kQueryGroup = 8;

template <class T>
struct QueryTileState {
  const T* q;           // query 0 of the call
  size_t q_stride;
  size_t head_width;
  size_t acc_stride;    // QueryTileAccumulatorStride(head_width)
  T scale;
  T* keys_t;            // [head_width, lanes]: key k of the tile in lane k
  T* acc;               // [kQueryTileRows, acc_stride]
  T* sums;              // [kQueryTileRows, kQueryTileMaxLanes]
  T* weights;           // [kQueryTileRows, kQueryTileMaxLanes]
  T* maxima;            // [kQueryTileRows]
};

template <class T>
const T* PrefixRow(const PrefixSegment<T>& first, const PrefixSegment<T>& second, const T* first_base,
                   const T* second_base, size_t p) {
  return p < first.count ? first_base + p * first.stride
                         : second_base + (p - first.count) * second.stride;
}

// keys_t[i·lanes + k] = key_{begin + k}[i] for k < count, 0 for the lanes after.
template <class T>
void TransposeKeyTile(const PrefixSegment<T>& first, const PrefixSegment<T>& second, size_t begin,
                      size_t count, size_t lanes, size_t head_width, T* keys_t) {
  for (size_t k = 0; k < count; ++k) {
    const T* key = PrefixRow(first, second, first.keys, second.keys, begin + k);
    for (size_t i = 0; i < head_width; ++i) keys_t[i * lanes + k] = key[i];
  }
  for (size_t k = count; k < lanes; ++k) {
    for (size_t i = 0; i < head_width; ++i) keys_t[i * lanes + k] = T(0);
  }
}

// One key tile [begin, begin + lanes) for the kQ queries of a group starting at
// tile row `row` (call query `query`), query j seeing visible[j] prefix rows.
template <size_t kQ, class D, typename T = hn::TFromD<D>>
HWY_INLINE void GroupKeyTile(D d, const QueryTileState<T>& st, const PrefixSegment<T>& first,
                             const PrefixSegment<T>& second, size_t query, size_t row,
                             const size_t* visible, size_t begin) {
  const size_t lanes = hn::Lanes(d);
  const size_t hw = st.head_width;
  // Scores: keys in lanes, one FMA chain per query over the head.
  hn::Vec<D> s[kQ];
  const T* q[kQ];
  for (size_t j = 0; j < kQ; ++j) {
    s[j] = hn::Zero(d);
    q[j] = st.q + (query + j) * st.q_stride;
  }
  for (size_t i = 0; i < hw; ++i) {
    const auto key = hn::LoadU(d, st.keys_t + i * lanes);
    for (size_t j = 0; j < kQ; ++j) s[j] = hn::MulAdd(hn::Set(d, q[j][i]), key, s[j]);
  }
  // Online softmax per query: new max, rescale factor, this tile's exps.
  const T lowest = -std::numeric_limits<T>::infinity();
  T alpha[kQ];
  size_t mixed_keys = 0;  // keys any query of the group sees in this tile
  for (size_t j = 0; j < kQ; ++j) {
    const size_t valid = visible[j] > begin ? std::min(lanes, visible[j] - begin) : 0;
    mixed_keys = std::max(mixed_keys, valid);
    const auto mask = hn::FirstN(d, valid);
    const auto scores = hn::Mul(s[j], hn::Set(d, st.scale));
    const T tile_max =
        valid == 0 ? lowest
                   : hn::GetLane(hn::MaxOfLanes(d, hn::IfThenElse(mask, scores, hn::Set(d, lowest))));
    T& running = st.maxima[row + j];
    const T old_max = running;
    const T new_max = std::max(old_max, tile_max);
    if (new_max == old_max) {
      alpha[j] = T(1);
    } else if (old_max == lowest) {
      alpha[j] = T(0);  // nothing accumulated yet
    } else {
      alpha[j] = hn::GetLane(hn::Exp(d, hn::Set(d, old_max - new_max)));
    }
    running = new_max;
    // Masked lanes are shifted to exp(0) and then zeroed: no out-of-range Exp.
    const auto shift = hn::Set(d, new_max);
    const auto e =
        hn::IfThenElseZero(mask, hn::Exp(d, hn::Sub(hn::IfThenElse(mask, scores, shift), shift)));
    hn::StoreU(e, d, st.weights + (row + j) * kQueryTileMaxLanes);
    T* sum = st.sums + (row + j) * kQueryTileMaxLanes;
    hn::StoreU(hn::Add(hn::Mul(hn::LoadU(d, sum), hn::Set(d, alpha[j])), e), d, sum);
  }
  // Value mix: every value vector loaded once for the group, one FMA chain per
  // query and column vector, in ascending p.
  const size_t full = hw / lanes * lanes, columns = (hw + lanes - 1) / lanes * lanes;
  for (size_t col = 0; col < columns; col += lanes) {
    const bool tail = col >= full;
    const auto tail_mask = hn::FirstN(d, hw - std::min(hw, col));
    hn::Vec<D> acc[kQ];
    for (size_t j = 0; j < kQ; ++j) {
      acc[j] = hn::Mul(hn::LoadU(d, st.acc + (row + j) * st.acc_stride + col), hn::Set(d, alpha[j]));
    }
    for (size_t k = 0; k < mixed_keys; ++k) {
      const T* value_row = PrefixRow(first, second, first.values, second.values, begin + k) + col;
      const auto value = tail ? hn::MaskedLoad(tail_mask, d, value_row) : hn::LoadU(d, value_row);
      for (size_t j = 0; j < kQ; ++j) {
        acc[j] = hn::MulAdd(hn::Set(d, st.weights[(row + j) * kQueryTileMaxLanes + k]), value, acc[j]);
      }
    }
    for (size_t j = 0; j < kQ; ++j) hn::StoreU(acc[j], d, st.acc + (row + j) * st.acc_stride + col);
  }
}

template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void AttendQueryTileRows(D d, const T* q, size_t q_stride, size_t queries,
                                    const PrefixSegment<T>& first, const PrefixSegment<T>& second,
                                    size_t head_width, T scale, T* scratch, T* out, size_t out_stride) {
  const size_t lanes = hn::Lanes(d);
  const size_t n = first.count + second.count;
  const size_t acc_stride = QueryTileAccumulatorStride(head_width);
  QueryTileState<T> st;
  st.q = q;
  st.q_stride = q_stride;
  st.head_width = head_width;
  st.acc_stride = acc_stride;
  st.scale = scale;
  st.keys_t = scratch;
  st.acc = st.keys_t + kQueryTileMaxLanes * head_width;
  st.sums = st.acc + kQueryTileRows * acc_stride;
  st.weights = st.sums + kQueryTileRows * kQueryTileMaxLanes;
  st.maxima = st.weights + kQueryTileRows * kQueryTileMaxLanes;
  for (size_t tile = 0; tile < queries; tile += kQueryTileRows) {
    const size_t rows = std::min(kQueryTileRows, queries - tile);
    std::fill_n(st.acc, rows * acc_stride, T(0));
    std::fill_n(st.sums, rows * kQueryTileMaxLanes, T(0));
    std::fill_n(st.maxima, rows, -std::numeric_limits<T>::infinity());
    // Query `tile + row` sees n − (queries − 1 − tile − row) rows.
    const size_t first_visible = n - (queries - 1 - tile);
    const size_t last_visible = first_visible + rows - 1;
    for (size_t begin = 0; begin < last_visible; begin += lanes) {
      TransposeKeyTile(first, second, begin, std::min(lanes, last_visible - begin), lanes, head_width,
                       st.keys_t);
      for (size_t row = 0; row < rows; row += kQueryGroup) {
        const size_t group = std::min(kQueryGroup, rows - row);
        size_t visible[kQueryGroup];
        for (size_t j = 0; j < group; ++j) visible[j] = first_visible + row + j;
        if (visible[group - 1] <= begin) continue;  // the whole group's prefixes end before
        const size_t query = tile + row;
        switch (group) {
          case 8: GroupKeyTile<8>(d, st, first, second, query, row, visible, begin); break;
          case 7: GroupKeyTile<7>(d, st, first, second, query, row, visible, begin); break;
          case 6: GroupKeyTile<6>(d, st, first, second, query, row, visible, begin); break;
          case 5: GroupKeyTile<5>(d, st, first, second, query, row, visible, begin); break;
          case 4: GroupKeyTile<4>(d, st, first, second, query, row, visible, begin); break;
          case 3: GroupKeyTile<3>(d, st, first, second, query, row, visible, begin); break;
          case 2: GroupKeyTile<2>(d, st, first, second, query, row, visible, begin); break;
          default: GroupKeyTile<1>(d, st, first, second, query, row, visible, begin); break;
        }
      }
    }
    // out = acc · (1 / Σ exps).
    const size_t full = head_width / lanes * lanes;
    for (size_t row = 0; row < rows; ++row) {
      const T total = hn::GetLane(hn::SumOfLanes(d, hn::LoadU(d, st.sums + row * kQueryTileMaxLanes)));
      const auto reciprocal = hn::Set(d, T(1) / total);
      const T* acc = st.acc + row * acc_stride;
      T* o = out + (tile + row) * out_stride;
      size_t j = 0;
      for (; j < full; j += lanes) hn::StoreU(hn::Mul(hn::LoadU(d, acc + j), reciprocal), d, o + j);
      if (j < head_width) {
        hn::BlendedStore(hn::Mul(hn::LoadU(d, acc + j), reciprocal), hn::FirstN(d, head_width - j), d,
                         o + j);
      }
    }
  }
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_QUERY_TILE_ATTENTION_INL_H_ toggle
