#include <cmath>
#include <limits>

#include "kvrt/simd/softmax.h"

namespace kvrt::simd {
namespace {

template <class T>
void SoftmaxSkipFirstMax(const T* in, T* out, size_t n) {
  T max_value = -std::numeric_limits<T>::infinity();
  for (size_t i = 0; i < n; ++i) max_value = std::fmax(max_value, in[i]);
  // The first maximal entry contributes the exact 1 of the denominator.
  T tail = T(0);
  bool skipped = false;
  for (size_t i = 0; i < n; ++i) {
    const T shifted = in[i] - max_value;
    if (shifted == T(0) && !skipped) {
      skipped = true;
    } else {
      tail = tail + std::exp(shifted);
    }
  }
  const T denominator = T(1) + tail;
  for (size_t i = 0; i < n; ++i) out[i] = std::exp(in[i] - max_value) / denominator;
}

}  // namespace

void SoftmaxScalar(const float* in, float* out, size_t n) { SoftmaxSkipFirstMax(in, out, n); }
void SoftmaxScalar(const double* in, double* out, size_t n) { SoftmaxSkipFirstMax(in, out, n); }

}  // namespace kvrt::simd
