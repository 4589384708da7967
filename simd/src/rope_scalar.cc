#include "kvrt/simd/rope.h"

namespace kvrt::simd {
namespace {

template <class T>
void RotatePairs(T* v, const T* cos, const T* sin, size_t pairs, size_t heads) {
  for (size_t h = 0; h < heads; ++h) {
    T* head = v + h * 2 * pairs;
    for (size_t i = 0; i < pairs; ++i) {
      const T x0 = head[2 * i];
      const T x1 = head[2 * i + 1];
      head[2 * i] = x0 * cos[i] - x1 * sin[i];
      head[2 * i + 1] = x0 * sin[i] + x1 * cos[i];
    }
  }
}

}  // namespace

void RopeRotateScalar(float* v, const float* cos, const float* sin, size_t pairs, size_t heads) {
  RotatePairs(v, cos, sin, pairs, heads);
}
void RopeRotateScalar(double* v, const double* cos, const double* sin, size_t pairs,
                      size_t heads) {
  RotatePairs(v, cos, sin, pairs, heads);
}

}  // namespace kvrt::simd
