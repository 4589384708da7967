// Dot product.
//
// Scalar twin: Σ a[i]·b[i] accumulated from 0 in ascending i, each product rounded
// before it is added (the reference numerics of spec/model.md §11).
#pragma once

#include <cstddef>

namespace kvrt::simd {

float DotScalar(const float* a, const float* b, size_t n);
double DotScalar(const double* a, const double* b, size_t n);

}  // namespace kvrt::simd
