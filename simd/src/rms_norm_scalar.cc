#include <cmath>

#include "kvrt/simd/rms_norm.h"

namespace kvrt::simd {
namespace {

template <class T>
T RmsNormExpLog(const T* x, const T* gain, T epsilon, T* y, size_t n) {
  T sum_squares = T(0);
  for (size_t j = 0; j < n; ++j) sum_squares = sum_squares + x[j] * x[j];
  const T mean_square = sum_squares / static_cast<T>(n);
  const T inverse = std::exp(std::log(mean_square + epsilon) * T(-0.5));
  for (size_t j = 0; j < n; ++j) y[j] = (x[j] * inverse) * gain[j];
  return inverse;
}

}  // namespace

float RmsNormScalar(const float* x, const float* gain, float epsilon, float* y, size_t n) {
  return RmsNormExpLog(x, gain, epsilon, y, n);
}
double RmsNormScalar(const double* x, const double* gain, double epsilon, double* y, size_t n) {
  return RmsNormExpLog(x, gain, epsilon, y, n);
}

}  // namespace kvrt::simd
