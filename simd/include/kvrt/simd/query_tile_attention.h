// Causal attention of several consecutive query rows of one head over their
// shared prefix at once: the prefill kernel of the opt-in batch-variant mode
// (EngineOptions::batch_invariant = false). AttendPrefix (prefix_attention.h)
// runs one query at a time and pays a lane reduction per key, re-reading every
// K/V row for every query; here `lanes` queries sit in the lanes of a vector
// (their q transposed once), every key and value element is broadcast against
// two such lane groups, and every reduction over keys is lane-wise: no
// horizontal reduction at all, and each K/V row read serves 2·lanes queries.
//
// Problem: queries r = 0 .. m−1 (row r at q + r·q_stride) over the prefix rows
// p = 0 .. n−1, n = first.count + second.count (segments as in
// prefix_attention.h). Query r sees the first n_r = n − (m − 1 − r) rows: the
// last query sees them all, each earlier one one row fewer (causal prefill).
//
//   s_rp  = dot(q_r, key_p) · scale                 p < n_r
//   out_r = Σ_p softmax(s_r)_p · value_p            written to out + r·out_stride
//
// Method (online softmax per query lane, keys in tiles of kQueryTileKeys from
// p = 0): each score in one FMA chain over head_width, then · scale; the running
// max m_t = max(m_{t−1}, max of the tile); the sum and the value accumulators
// are multiplied by α_t = exp(m_{t−1} − m_t) (exactly 1 when the max did not
// move), then the tile's e_p = exp(s_p − m_t) are added in ascending p (the sum
// in one chain, each output column in one FMA chain). out = acc · (1 / sum).
// Every query's arithmetic depends only on its own (q_r, n_r, inputs), not on its
// lane or the other queries of the call: a key hidden from one lane adds exactly
// 0 there, a tile past its prefix multiplies by exactly 1. What changes with the
// step's shape in the batch-variant mode is which kernel runs (AttendPrefix for
// a single decode row, this one for a prefill run), so it is not batch-invariant.
//
// Scalar twin: AttendPrefixScalar of every query over its own n_r rows (the
// formula of prefix_attention.h, two passes, ascending p).
//
// AttendQueryTile (Highway, dispatched at run time; lanes capped at
// kQueryTileMaxLanes):
//   Lanes:     float, double.
//   Max error: per query, with n = n_r, T = ⌈n / kQueryTileKeys⌉ key tiles, σ the
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
// Scratch: QueryTileAttentionScratch(head_width) elements, whatever m and n: the
// transposed queries, accumulators and one tile's scores of two lane groups.
#pragma once

#include <cstddef>

#include "kvrt/simd/prefix_attention.h"

namespace kvrt::simd {

// Query rows the engine hands one task (a multiple of every lane count).
inline constexpr size_t kQueryTileRows = 64;
inline constexpr size_t kQueryTileMaxLanes = 16;  // queries in flight, at most
inline constexpr size_t kQueryTileKeys = 16;      // keys per online-softmax step

// Elements of scratch one AttendQueryTile call needs: two lane groups (which
// share every key and value load) of transposed queries, accumulators and a
// tile's scores.
inline constexpr size_t QueryTileAttentionScratch(size_t head_width) {
  return 2 * (2 * head_width * kQueryTileMaxLanes + kQueryTileKeys * kQueryTileMaxLanes);
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
