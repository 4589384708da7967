// Attention value mixing of one query row:
//   out[j] = Σ_p weights[p] · values[p·value_stride + j],   j = 0 .. head_width−1,
// over p = 0 .. count−1. `out` is overwritten (count = 0 gives zeros). One call per
// query row, so the engine dispatches once per query instead of once per key.
//
// Scalar twin: out = 0, then ScaledAccumulateScalar(weights[p], value_p, out,
// head_width) in ascending p — the reference forward's loop over visible values.
//
// MixValues (Highway, dispatched at run time):
//   Lanes:     float, double.
//   Method:    the output row is held in registers in blocks of up to four vectors;
//              even and odd p feed two accumulator sets of fused multiply-adds (two
//              independent chains per column), added at the end. The order depends
//              only on count and the lane count.
//   Max error: |out[j] − twin[j]| ≤ (count + 2)·ε·Σ_p|weights[p]·value_p[j]|
//              (+ count·denorm_min for subnormal products).
//   Range:     finite inputs; count ≥ 0, head_width ≥ 0.
//   Aliasing:  out must not overlap weights or values.
#pragma once

#include <cstddef>

namespace kvrt::simd {

void MixValuesScalar(const float* weights, const float* values, size_t value_stride, size_t count,
                     size_t head_width, float* out);
void MixValuesScalar(const double* weights, const double* values, size_t value_stride,
                     size_t count, size_t head_width, double* out);

void MixValues(const float* weights, const float* values, size_t value_stride, size_t count,
               size_t head_width, float* out);
void MixValues(const double* weights, const double* values, size_t value_stride, size_t count,
               size_t head_width, double* out);

}  // namespace kvrt::simd
