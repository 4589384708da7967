// Matrix–matrix product C = A·W for prefill: A is [M, K] row-major with row stride
// `lda`, W a packed [K, N] matrix (packed_matrix.h), C is [M, N] with row stride `ldc`.
//
// Scalar twin: every C[m][n] = Σ_k A[m][k]·W[k][n] in ascending k (row by row the
// matrix–vector twin), over all N columns or the columns of the panels
// [panel_begin, panel_end).
//
// MatMul (Highway, dispatched at run time) writes C[m][n] for every row m < M and the
// columns n of the panels [panel_begin, panel_end), and nothing else.
//   Lanes:     float, double.
//   Layout:    w.panel_width == kPanelWidth<T> (PackMatrix); any other panel width is
//              computed by the twin. lda ≥ K, ldc ≥ N.
//   Method:    register-blocked micro-kernel (AVX-512: 8 rows × one 32-float or
//              16-double panel = 16 vector accumulators; AVX2: 3 rows; scalar: 1 row),
//              cache-blocked over M and over K in a FIXED ascending K-block order. The
//              partial sums of a K block are stored to C and reloaded for the next
//              block, which rounds nothing, so every C[m][n] is ONE chain of fused
//              multiply-adds over k = 0..K−1 ascending from 0: independent of the
//              M/N blocking, the panel range and the thread split, and equal to
//              MatVec (matvec.h) of row m bit for bit on the same target.
//   Max error: |C[m][n] − twin| ≤ (K + 2)·ε·Σ_k|A[m][k]·W[k][n]| (+ K·denorm_min for
//              subnormal products). The scalar target has no FMA and equals the twin.
//   Range:     finite inputs; any M, K, N ≥ 0; panel_begin ≤ panel_end ≤ panels.
//   Aliasing:  C must not overlap A or W.
#pragma once

#include <cstddef>

#include "kvrt/simd/packed_matrix.h"

namespace kvrt::simd {

void MatMulScalar(const float* a, size_t lda, size_t m, const PackedMatrixView<float>& w,
                  float* c, size_t ldc);
void MatMulScalar(const double* a, size_t lda, size_t m, const PackedMatrixView<double>& w,
                  double* c, size_t ldc);
void MatMulScalar(const float* a, size_t lda, size_t m, const PackedMatrixView<float>& w,
                  float* c, size_t ldc, size_t panel_begin, size_t panel_end);
void MatMulScalar(const double* a, size_t lda, size_t m, const PackedMatrixView<double>& w,
                  double* c, size_t ldc, size_t panel_begin, size_t panel_end);

void MatMul(const float* a, size_t lda, size_t m, const PackedMatrixView<float>& w, float* c,
            size_t ldc, size_t panel_begin, size_t panel_end);
void MatMul(const double* a, size_t lda, size_t m, const PackedMatrixView<double>& w, double* c,
            size_t ldc, size_t panel_begin, size_t panel_end);

}  // namespace kvrt::simd
