// Packing a weight matrix into the panel layout of the fast matrix kernels.
//
// PackMatrix reads a [rows = K, cols = N] matrix whose element (k, n) is
//   source_is_transposed ? source[n·K + k]   (an [out, in] row-major matrix)
//                        : source[k·N + n]   (an [in, out] row-major matrix)
// and writes PackedElementCount<Out>(K, N) elements to `out` in the layout
// [ceil(N / NR)][K][NR] with NR = kPanelWidth<Out>, the last panel zero-padded.
// Returns the view of `out`. Converting double to float rounds to nearest; every
// other element is copied exactly. Packing runs once per model load, so it is plain
// C++ rather than a dispatched kernel; it needs no twin because the view's at(k, n)
// is checked against the source element by element.
// For the best load throughput `out` should be 64-byte aligned; any alignment works.
// `out` must not overlap `source`.
#pragma once

#include <cstddef>

#include "kvrt/simd/packed_matrix.h"

namespace kvrt::simd {

PackedMatrixView<float> PackMatrix(const float* source, size_t rows, size_t cols,
                                   bool source_is_transposed, float* out);
PackedMatrixView<float> PackMatrix(const double* source, size_t rows, size_t cols,
                                   bool source_is_transposed, float* out);
PackedMatrixView<double> PackMatrix(const float* source, size_t rows, size_t cols,
                                    bool source_is_transposed, double* out);
PackedMatrixView<double> PackMatrix(const double* source, size_t rows, size_t cols,
                                    bool source_is_transposed, double* out);

}  // namespace kvrt::simd
