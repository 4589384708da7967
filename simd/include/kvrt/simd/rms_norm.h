// RMSNorm of one row: y = (x · inv) · gain with inv = 1/sqrt(mean(x²) + eps).
//
// Scalar twin (spec/model.md §3): s = Σ x² ascending; ms = s / n; inv =
// exp(log(ms + eps) · −0.5); y[j] = (x[j]·inv)·gain[j]. Returns inv; a non-finite
// inv means the row had zero energy with eps = 0. `x` and `y` may alias.
//
// RmsNorm (Highway, dispatched at run time):
//   Lanes:     float, double.
//   Method:    s = Σ x² with four vector accumulators of fused multiply-adds;
//              inv = 1 / sqrt(s / n + eps) (correctly rounded sqrt and division, more
//              accurate than the twin's exp∘log); y[j] = (x[j]·inv)·gain[j] with the
//              twin's two roundings.
//   Max error: relative error of inv against the twin
//                r = (n/2 + |ln(ms + eps)|/2 + 3)·ε
//              (the two sums of squares are within γ_n and enter halved; the twin's
//              log carries 1 ULP of |ln(ms + eps)| into its exp); each y[j] is within
//              (r + 2ε)·|y[j]| plus denorm_min for subnormal results.
//   Range:     n ≥ 1, any finite row. A row whose Σ x² overflows (±1e30 floats) is
//              first scaled by a power of two that brings its largest |x| below 1
//              (exact), so it normalises like any other (y within the bound above of
//              the exact result); the returned inv may then be subnormal or zero.
//              The twin, the reference path's f64 arithmetic, squares such a row as
//              it is and returns inv = 0 and a zero row. An infinite x[j] gives NaN.
//   Aliasing:  x == y allowed; gain must not overlap y.
#pragma once

#include <cstddef>

namespace kvrt::simd {

float RmsNormScalar(const float* x, const float* gain, float epsilon, float* y, size_t n);
double RmsNormScalar(const double* x, const double* gain, double epsilon, double* y, size_t n);

float RmsNorm(const float* x, const float* gain, float epsilon, float* y, size_t n);
double RmsNorm(const double* x, const double* gain, double epsilon, double* y, size_t n);

}  // namespace kvrt::simd
