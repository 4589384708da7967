// Max-shifted softmax over one row.
//
// Scalar twin (spec/model.md §7.3): mx = max; tail = Σ exp(x−mx) over every entry
// except the first one equal to mx, in ascending order; p = exp(x−mx) / (1 + tail).
// `in` and `out` may alias.
//
// Softmax (Highway, dispatched at run time):
//   Lanes:     float, double.
//   Method:    mx = max (exact, order-free); e = Exp(x − mx) with hwy/contrib/math
//              (≤ 1 ULP, flushes to 0 below −104 for float, −1000 for double);
//              D = Σ e over all entries in lane-parallel order (the max entry adds the
//              exact 1); p = e · (1/D) (a multiply instead of the twin's division:
//              one more rounding, ~25% faster). x − mx is computed exactly as the twin
//              computes it.
//   Max error: |Softmax − SoftmaxScalar| ≤ (n + 2·kExpUlp + 4)·ε·p + 2·min_normal
//              with kExpUlp = 1: both exps (Highway and libm) are within 1 ULP, both
//              denominators are sums of n positive terms (γ_n each), the twin divides
//              once, the fast kernel rounds 1/D and the product; the absolute term
//              covers exps whose results are subnormal.
//   Range:     finite inputs (any spread: entries 1e30 below the max give p = 0); n ≥ 0.
//   Aliasing:  in == out allowed (element-wise in place); partial overlap is not.
#pragma once

#include <cstddef>

namespace kvrt::simd {

void SoftmaxScalar(const float* in, float* out, size_t n);
void SoftmaxScalar(const double* in, double* out, size_t n);

void Softmax(const float* in, float* out, size_t n);
void Softmax(const double* in, double* out, size_t n);

}  // namespace kvrt::simd
