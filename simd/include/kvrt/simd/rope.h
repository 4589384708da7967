// Rotary position embedding of interleaved pairs (2i, 2i+1), in place.
//
// Scalar twin (spec/model.md §6): with c = cos[i], s = sin[i] from the precomputed
// tables of one position, v'[2i] = x0·c − x1·s and v'[2i+1] = x0·s + x1·c, every
// product rounded separately. Rotates `heads` consecutive head vectors of width
// 2·pairs with the same table row.
//
// RopeRotate (Highway, dispatched at run time):
//   Lanes:     float, double.
//   Method:    v' = v·[c0 c0 c1 c1 ..] + swap_pairs(v)·[−s0 s0 −s1 s1 ..] with separate
//              multiplies and adds (no FMA): x0·c + x1·(−s) rounds exactly like
//              x0·c − x1·s and addition commutes, so the result is
//              BIT-IDENTICAL to the twin on every target.
//   Max error: 0.
//   Range:     any inputs; pairs ≥ 0, heads ≥ 0.
//   Aliasing:  v is rotated in place and must not overlap cos or sin.
#pragma once

#include <cstddef>

namespace kvrt::simd {

void RopeRotateScalar(float* v, const float* cos, const float* sin, size_t pairs, size_t heads);
void RopeRotateScalar(double* v, const double* cos, const double* sin, size_t pairs, size_t heads);

void RopeRotate(float* v, const float* cos, const float* sin, size_t pairs, size_t heads);
void RopeRotate(double* v, const double* cos, const double* sin, size_t pairs, size_t heads);

}  // namespace kvrt::simd
