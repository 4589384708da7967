// Max-shifted softmax over one row.
//
// Scalar twin (spec/model.md §7.3): mx = max; tail = Σ exp(x−mx) over every entry
// except the first one equal to mx, in ascending order; p = exp(x−mx) / (1 + tail).
// `in` and `out` may alias.
#pragma once

#include <cstddef>

namespace kvrt::simd {

void SoftmaxScalar(const float* in, float* out, size_t n);
void SoftmaxScalar(const double* in, double* out, size_t n);

}  // namespace kvrt::simd
