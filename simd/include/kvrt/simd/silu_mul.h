// SwiGLU gating: out = SiLU(gate) · up.
//
// Scalar twin (spec/model.md §8): σ(x) = 1/(1+exp(−x)) for x ≥ 0, else
// e/(1+e) with e = exp(x) evaluated once; out[i] = (g·σ(g))·up[i]. `out` may alias
// `gate` or `up`.
//
// SiluMul (Highway, dispatched at run time):
//   Lanes:     float, double.
//   Method:    the twin's branch-stable formula for all lanes at once: e = Exp(−|g|)
//              (hwy/contrib/math, ≤ 1 ULP), σ = (g < 0 ? e : 1) / (1 + e),
//              out = (g·σ)·up, with the twin's roundings after the exp.
//   Max error: |SiluMul − SiluMulScalar| ≤ (2·kExpUlp + 6)·ε·|out|
//              + 4·denorm_min·|g·up| + 2·denorm_min, kExpUlp = 1 (both exps within
//              1 ULP; 1+e, the division and two products round once each; the
//              absolute terms cover subnormal e for g < −87 (float) / −708 (double)).
//   Range:     finite inputs (|g| up to FLT_MAX / DBL_MAX).
//   Aliasing:  out == gate or out == up allowed (element-wise); partial overlap is not.
#pragma once

#include <cstddef>

namespace kvrt::simd {

void SiluMulScalar(const float* gate, const float* up, float* out, size_t n);
void SiluMulScalar(const double* gate, const double* up, double* out, size_t n);

void SiluMul(const float* gate, const float* up, float* out, size_t n);
void SiluMul(const double* gate, const double* up, double* out, size_t n);

}  // namespace kvrt::simd
