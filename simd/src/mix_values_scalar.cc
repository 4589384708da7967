#include <algorithm>

#include "kvrt/simd/mix_values.h"
#include "kvrt/simd/scaled_accumulate.h"

namespace kvrt::simd {
namespace {

// The reference forward's value loop: zero the row, then one scaled accumulate per
// value row in ascending p.
template <class T>
void AccumulateEachValue(const T* weights, const T* values, size_t value_stride, size_t count,
                         size_t head_width, T* out) {
  std::fill_n(out, head_width, T(0));
  for (size_t p = 0; p < count; ++p) {
    ScaledAccumulateScalar(weights[p], values + p * value_stride, out, head_width);
  }
}

}  // namespace

void MixValuesScalar(const float* weights, const float* values, size_t value_stride, size_t count,
                     size_t head_width, float* out) {
  AccumulateEachValue(weights, values, value_stride, count, head_width, out);
}
void MixValuesScalar(const double* weights, const double* values, size_t value_stride,
                     size_t count, size_t head_width, double* out) {
  AccumulateEachValue(weights, values, value_stride, count, head_width, out);
}

}  // namespace kvrt::simd
