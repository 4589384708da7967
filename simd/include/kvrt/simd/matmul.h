// Matrix–matrix product C = A·W for prefill: A is [M, K] row-major with row stride
// `lda`, W a packed [K, N] matrix (packed_matrix.h), C is [M, N] with row stride `ldc`.
//
// Scalar twin: every C[m][n] = Σ_k A[m][k]·W[k][n] in ascending k (row by row the
// matrix–vector twin).
#pragma once

#include <cstddef>

#include "kvrt/simd/packed_matrix.h"

namespace kvrt::simd {

void MatMulScalar(const float* a, size_t lda, size_t m, const PackedMatrixView<float>& w,
                  float* c, size_t ldc);
void MatMulScalar(const double* a, size_t lda, size_t m, const PackedMatrixView<double>& w,
                  double* c, size_t ldc);

}  // namespace kvrt::simd
