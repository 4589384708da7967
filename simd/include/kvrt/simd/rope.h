// Rotary position embedding of interleaved pairs (2i, 2i+1), in place.
//
// Scalar twin (spec/model.md §6): with c = cos[i], s = sin[i] from the precomputed
// tables of one position, v'[2i] = x0·c − x1·s and v'[2i+1] = x0·s + x1·c, every
// product rounded separately. Rotates `heads` consecutive head vectors of width
// 2·pairs with the same table row.
#pragma once

#include <cstddef>

namespace kvrt::simd {

void RopeRotateScalar(float* v, const float* cos, const float* sin, size_t pairs, size_t heads);
void RopeRotateScalar(double* v, const double* cos, const double* sin, size_t pairs, size_t heads);

}  // namespace kvrt::simd
