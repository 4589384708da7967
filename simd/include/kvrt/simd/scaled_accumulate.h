// Scaled accumulate y += w·x (attention value mixing).
//
// Scalar twin: y[i] = y[i] + (w·x[i]), the product rounded before the add.
//
// ScaledAccumulate (Highway, dispatched at run time):
//   Lanes:     float, double.
//   Method:    y[i] = fma(w, x[i], y[i]): one rounding instead of the twin's two
//              (the scalar target has no FMA and matches the twin bit for bit).
//   Max error: |ScaledAccumulate − ScaledAccumulateScalar| ≤ ε·(|y + w·x| + |w·x|)
//              per element, plus denorm_min when w·x is subnormal.
//   Range:     finite inputs; any n ≥ 0.
//   Aliasing:  x == y allowed (element-wise); partial overlap is not.
#pragma once

#include <cstddef>

namespace kvrt::simd {

void ScaledAccumulateScalar(float w, const float* x, float* y, size_t n);
void ScaledAccumulateScalar(double w, const double* x, double* y, size_t n);

void ScaledAccumulate(float w, const float* x, float* y, size_t n);
void ScaledAccumulate(double w, const double* x, double* y, size_t n);

}  // namespace kvrt::simd
