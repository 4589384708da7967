// Attention scores of one query against `count` cached keys:
//   out[p] = dot(q, keys + p·key_stride) · scale,   p = 0 .. count−1,
// with q and every key `head_width` wide. One call per query row, so the engine
// dispatches once per query instead of once per key.
//
// Scalar twin: out[p] = DotScalar(q, key_p, head_width) · scale in ascending p — the
// reference forward's loop over visible keys.
//
// AttentionScores (Highway, dispatched at run time):
//   Lanes:     float, double.
//   Method:    four keys at a time, one vector accumulator of fused multiply-adds per
//              key over head_width, then a lane reduction; the product with scale
//              is rounded as in the twin.
//   Max error: |out − twin| ≤ |scale|·(h + 2)·ε·Σ_i|q[i]·key_p[i]| + ε·|out|
//              (+ h·denorm_min·|scale| for subnormal products), h = head_width.
//   Range:     finite inputs; count ≥ 0, head_width ≥ 0, key_stride ≥ head_width
//              (or any stride when keys do not overlap out).
//   Aliasing:  out must not overlap q or keys.
#pragma once

#include <cstddef>

namespace kvrt::simd {

void AttentionScoresScalar(const float* q, const float* keys, size_t key_stride, size_t count,
                           size_t head_width, float scale, float* out);
void AttentionScoresScalar(const double* q, const double* keys, size_t key_stride, size_t count,
                           size_t head_width, double scale, double* out);

void AttentionScores(const float* q, const float* keys, size_t key_stride, size_t count,
                     size_t head_width, float scale, float* out);
void AttentionScores(const double* q, const double* keys, size_t key_stride, size_t count,
                     size_t head_width, double scale, double* out);

}  // namespace kvrt::simd
