#include "kvrt/simd/scaled_accumulate.h"

namespace kvrt::simd {
namespace {

template <class T>
void Accumulate(T w, const T* x, T* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = y[i] + w * x[i];
}

}  // namespace

void ScaledAccumulateScalar(float w, const float* x, float* y, size_t n) { Accumulate(w, x, y, n); }
void ScaledAccumulateScalar(double w, const double* x, double* y, size_t n) {
  Accumulate(w, x, y, n);
}

}  // namespace kvrt::simd
