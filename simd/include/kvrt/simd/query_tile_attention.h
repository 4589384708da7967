// Causal attention of several consecutive query rows of one head over their
// shared prefix at once: the prefill kernel of the opt-in batch-variant mode
// (EngineOptions::batch_invariant = false). AttendPrefix (prefix_attention.h)
// runs one query at a time and pays a lane reduction per key; here a tile of
// keys is transposed once so that `lanes` keys sit in the lanes of a vector,
// and every query of the tile broadcasts its q[i] against it: one reduction per
// query and key tile (the tile's max), and each K/V tile load serves up to
// kQueryTileRows queries.
//
// Problem: queries r = 0 .. m−1 (row r at q + r·q_stride) over the prefix rows
// p = 0 .. n−1, n = first.count + second.count (segments as in
// prefix_attention.h). Query r sees the first n_r = n − (m − 1 − r) rows: the
// last query sees them all, each earlier one one row fewer (causal prefill).
//
//   s_rp  = dot(q_r, key_p) · scale                 p < n_r
//   out_r = Σ_p softmax(s_r)_p · value_p            written to out + r·out_stride
//
// Method (online softmax, per query, keys in tiles of `lanes` from p = 0):
//   scores of a key tile in one FMA chain over head_width (keys in lanes), then
//   · scale; the running max m_t = max(m_{t−1}, tile max); the running sum and
//   the value accumulators are multiplied by α_t = exp(m_{t−1} − m_t) (exactly 1
//   when the max did not move), then the tile's e_p = exp(s_p − m_t) are added:
//   the sum lane by lane (lane k: p ≡ k mod lanes), each output column in one
//   FMA chain in ascending p. out = acc · (1 / Σ lanes of the sum).
//   Every query's arithmetic depends only on its own (q_r, n_r, inputs): a key
//   masked out for one query of a group adds exactly 0, a tile past its prefix
//   multiplies by exactly 1. What changes with the step's shape is only which
//   kernel runs (AttendPrefix for a single decode row, this one for prefill),
//   so the mode is not batch-invariant as a whole.
//
// Scalar twin: AttendPrefixScalar of every query over its own n_r rows (the
// formula of prefix_attention.h, two passes, ascending p).
//
// AttendQueryTile (Highway, dispatched at run time; lanes capped at
// kQueryTileMaxLanes):
//   Lanes:     float, double.
//   Max error: per query, with n = n_r, T = ⌈n / lanes⌉ ≤ n key tiles, σ the
//              score error bound of prefix_attention.h, R = max_p s_p − min_p s_p
//              (the score range), A_j = Σ_p w_p·|value_p[j]| (twin's weights w_p)
//              and V = max_p |value_p[j]|:
//              |out_j − twin_j| ≤ (4σ + 4ε·R + (2n + 3T + 8)·ε)·A_j
//                                 + (n + 2T)·V·denorm_min
//              (σ: as for AttendPrefix. ε·R: the exponents s_p − m_t and the
//              rescale arguments m_{t−1} − m_t are rounded differences whose
//              errors add up to at most ε/2·R each over a prefix, the twin's
//              s_p − m another ε/2·R, and a relative weight error η moves the
//              ratio of sums by 2η. 3T·ε: every rescale rounds α (≤ 1 ULP) and
//              the products that carry the accumulators, on numerator and
//              denominator. 2n + 8: the two sums, the exps and the final
//              reciprocal, as for AttendPrefix. The denorm_min term: exps and
//              rescaled accumulators that fall into the subnormal range.)
//   Range:     finite inputs; 1 ≤ m ≤ n (m = 0 does nothing); head_width ≥ 0.
//   Aliasing:  out and scratch must not overlap each other or the inputs.
//
// Scratch: QueryTileAttentionScratch(head_width) elements, whatever m and n:
// one transposed key tile, and the accumulators, running maxima and sums of
// one tile of kQueryTileRows queries (m > kQueryTileRows is walked in tiles).
#pragma once

#include <cstddef>

#include "kvrt/simd/prefix_attention.h"

namespace kvrt::simd {

inline constexpr size_t kQueryTileRows = 64;     // queries sharing each K/V tile load
inline constexpr size_t kQueryTileMaxLanes = 16;  // keys per tile, at most

// head_width rounded up to whole vectors of kQueryTileMaxLanes (the accumulator
// rows' stride, so that they are read and written in whole vectors).
inline constexpr size_t QueryTileAccumulatorStride(size_t head_width) {
  return (head_width + kQueryTileMaxLanes - 1) / kQueryTileMaxLanes * kQueryTileMaxLanes;
}

// Elements of scratch one AttendQueryTile call needs.
inline constexpr size_t QueryTileAttentionScratch(size_t head_width) {
  return kQueryTileMaxLanes * head_width                                 // transposed keys
         + kQueryTileRows * QueryTileAccumulatorStride(head_width)      // accumulators
         + kQueryTileRows * (2 * kQueryTileMaxLanes + 1);               // sums, weights, maxima
}

void AttendQueryTileScalar(const float* q, size_t q_stride, size_t queries, PrefixSegment<float> first,
                           PrefixSegment<float> second, size_t head_width, float scale, float* scratch,
                           float* out, size_t out_stride);
void AttendQueryTileScalar(const double* q, size_t q_stride, size_t queries,
                           PrefixSegment<double> first, PrefixSegment<double> second,
                           size_t head_width, double scale, double* scratch, double* out,
                           size_t out_stride);

void AttendQueryTile(const float* q, size_t q_stride, size_t queries, PrefixSegment<float> first,
                     PrefixSegment<float> second, size_t head_width, float scale, float* scratch,
                     float* out, size_t out_stride);
void AttendQueryTile(const double* q, size_t q_stride, size_t queries, PrefixSegment<double> first,
                     PrefixSegment<double> second, size_t head_width, double scale, double* scratch,
                     double* out, size_t out_stride);

}  // namespace kvrt::simd
