// Matrix–vector product y = x·W over a packed weight matrix (packed_matrix.h).
//
// Scalar twin: y[n] = Σ_k x[k]·W[k][n], accumulated from 0 in ascending k with every
// product rounded before it is added (all N outputs).
#pragma once

#include <cstddef>

#include "kvrt/simd/packed_matrix.h"

namespace kvrt::simd {

void MatVecScalar(const PackedMatrixView<float>& w, const float* x, float* y);
void MatVecScalar(const PackedMatrixView<double>& w, const double* x, double* y);

}  // namespace kvrt::simd
