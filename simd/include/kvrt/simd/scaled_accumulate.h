// Scaled accumulate y += w·x (attention value mixing).
//
// Scalar twin: y[i] = y[i] + (w·x[i]), the product rounded before the add.
#pragma once

#include <cstddef>

namespace kvrt::simd {

void ScaledAccumulateScalar(float w, const float* x, float* y, size_t n);
void ScaledAccumulateScalar(double w, const double* x, double* y, size_t n);

}  // namespace kvrt::simd
