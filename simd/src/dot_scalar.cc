#include "kvrt/simd/dot.h"

namespace kvrt::simd {
namespace {

template <class T>
T DotAscending(const T* a, const T* b, size_t n) {
  T sum = T(0);
  for (size_t i = 0; i < n; ++i) sum = sum + a[i] * b[i];
  return sum;
}

}  // namespace

float DotScalar(const float* a, const float* b, size_t n) { return DotAscending(a, b, n); }
double DotScalar(const double* a, const double* b, size_t n) { return DotAscending(a, b, n); }

}  // namespace kvrt::simd
