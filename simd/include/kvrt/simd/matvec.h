// Matrix–vector product y = x·W over a packed weight matrix (packed_matrix.h).
//
// Scalar twin: y[n] = Σ_k x[k]·W[k][n], accumulated from 0 in ascending k with every
// product rounded before it is added (all N outputs, or the columns of the panels
// [panel_begin, panel_end)).
//
// MatVec (Highway, dispatched at run time) writes the columns of the panels
// [panel_begin, panel_end), i.e. y[n] for n in [panel_begin·NR, min(panel_end·NR, N)),
// and nothing else, so the engine can split the panels over threads.
//   Lanes:     float, double.
//   Layout:    w.panel_width == kPanelWidth<T> (PackMatrix). Any other panel width
//              (e.g. a Dense view) is computed by the twin: correct, not fast.
//   Method:    every output column is ONE chain of fused multiply-adds over k = 0..K−1
//              in ascending order, starting from 0. Each panel is streamed once, row by
//              row; up to four panels are streamed together so that 8 independent
//              chains hide the FMA latency. Hence y[n] does not depend on the panel
//              range, the thread split or the grouping, and equals row results of
//              MatMul (matmul.h) bit for bit on the same target.
//   Max error: |y[n] − twin| ≤ (K + 2)·ε·Σ_k|x[k]·W[k][n]| (+ K·denorm_min for
//              subnormal products). The scalar target has no FMA and equals the twin.
//   Range:     finite inputs; K ≥ 0 (K = 0 gives zeros); panel_begin ≤ panel_end ≤ panels.
//   Aliasing:  y must not overlap x or w.
#pragma once

#include <cstddef>

#include "kvrt/simd/packed_matrix.h"

namespace kvrt::simd {

void MatVecScalar(const PackedMatrixView<float>& w, const float* x, float* y);
void MatVecScalar(const PackedMatrixView<double>& w, const double* x, double* y);
void MatVecScalar(const PackedMatrixView<float>& w, const float* x, float* y, size_t panel_begin,
                  size_t panel_end);
void MatVecScalar(const PackedMatrixView<double>& w, const double* x, double* y,
                  size_t panel_begin, size_t panel_end);

void MatVec(const PackedMatrixView<float>& w, const float* x, float* y, size_t panel_begin,
            size_t panel_end);
void MatVec(const PackedMatrixView<double>& w, const double* x, double* y, size_t panel_begin,
            size_t panel_end);

}  // namespace kvrt::simd
