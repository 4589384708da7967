// Dot product Σ a[i]·b[i].
//
// Scalar twin: Σ a[i]·b[i] accumulated from 0 in ascending i, each product rounded
// before it is added (the reference numerics of spec/model.md §11).
//
// Dot (Highway, dispatched at run time):
//   Lanes:     float, double.
//   Order:     four vector accumulators of fused multiply-adds over blocks of 4·L
//              elements (L = lanes; the last partial block goes to accumulators 0 and
//              1, its remainder masked), then a fixed pairwise tree and a lane
//              reduction: the order depends only on n and the target's lane count.
//   Max error: |Dot − DotScalar| ≤ (n + 2)·ε·Σ|a[i]·b[i]| (both are within γ_n of the
//              exact sum), plus n·denorm_min when products are subnormal.
//   Range:     finite inputs whose partial sums do not overflow; any n ≥ 0 (n = 0 → 0).
//   Aliasing:  a and b may alias; neither is written.
#pragma once

#include <cstddef>

namespace kvrt::simd {

float DotScalar(const float* a, const float* b, size_t n);
double DotScalar(const double* a, const double* b, size_t n);

float Dot(const float* a, const float* b, size_t n);
double Dot(const double* a, const double* b, size_t n);

}  // namespace kvrt::simd
