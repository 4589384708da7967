// RMSNorm of one row: y = (x · inv) · gain with inv = 1/sqrt(mean(x²) + eps).
//
// Scalar twin (spec/model.md §3): s = Σ x² ascending; ms = s / n; inv =
// exp(log(ms + eps) · −0.5); y[j] = (x[j]·inv)·gain[j]. Returns inv; a non-finite
// inv means the row had zero energy with eps = 0. `x` and `y` may alias.
#pragma once

#include <cstddef>

namespace kvrt::simd {

float RmsNormScalar(const float* x, const float* gain, float epsilon, float* y, size_t n);
double RmsNormScalar(const double* x, const double* gain, double epsilon, double* y, size_t n);

}  // namespace kvrt::simd
