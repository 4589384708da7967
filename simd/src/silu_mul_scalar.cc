#include <cmath>

#include "kvrt/simd/silu_mul.h"

namespace kvrt::simd {
namespace {

template <class T>
T BranchStableSigmoid(T x) {
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x);
  return e / (T(1) + e);
}

template <class T>
void Gate(const T* gate, const T* up, T* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const T g = gate[i];
    out[i] = (g * BranchStableSigmoid(g)) * up[i];
  }
}

}  // namespace

void SiluMulScalar(const float* gate, const float* up, float* out, size_t n) { Gate(gate, up, out, n); }
void SiluMulScalar(const double* gate, const double* up, double* out, size_t n) {
  Gate(gate, up, out, n);
}

}  // namespace kvrt::simd
