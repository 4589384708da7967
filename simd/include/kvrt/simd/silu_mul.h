// SwiGLU gating: out = SiLU(gate) · up.
//
// Scalar twin (spec/model.md §8): σ(x) = 1/(1+exp(−x)) for x ≥ 0, else
// e/(1+e) with e = exp(x) evaluated once; out[i] = (g·σ(g))·up[i]. `out` may alias
// `gate` or `up`.
#pragma once

#include <cstddef>

namespace kvrt::simd {

void SiluMulScalar(const float* gate, const float* up, float* out, size_t n);
void SiluMulScalar(const double* gate, const double* up, double* out, size_t n);

}  // namespace kvrt::simd
