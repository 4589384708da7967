#include <cmath>
#include <limits>
#include <vector>

#include "kvrt/simd/dot.h"
#include "kvrt/simd/prefix_attention.h"

namespace kvrt::simd {
namespace {

// The formula of prefix_attention.h one element at a time, in ascending p. The
// twin keeps all n scores (it is the test oracle, not a hot path).
template <class T>
void AttendEachKey(const T* q, PrefixSegment<T> first, PrefixSegment<T> second,
                   size_t head_width, T scale, T* out) {
  const size_t n = first.count + second.count;
  const auto key = [&](size_t p) {
    return p < first.count ? first.keys + p * first.stride
                           : second.keys + (p - first.count) * second.stride;
  };
  const auto value = [&](size_t p) {
    return p < first.count ? first.values + p * first.stride
                           : second.values + (p - first.count) * second.stride;
  };
  std::vector<T> e(n);
  T max_value = -std::numeric_limits<T>::infinity();
  for (size_t p = 0; p < n; ++p) {
    e[p] = DotScalar(q, key(p), head_width) * scale;
    max_value = std::fmax(max_value, e[p]);
  }
  T sum = T(0);
  for (size_t p = 0; p < n; ++p) {
    e[p] = std::exp(e[p] - max_value);
    sum = sum + e[p];
  }
  for (size_t j = 0; j < head_width; ++j) {
    T acc = T(0);
    for (size_t p = 0; p < n; ++p) acc = acc + e[p] * value(p)[j];
    out[j] = n == 0 ? T(0) : acc / sum;
  }
}

}  // namespace

void AttendPrefixScalar(const float* q, PrefixSegment<float> first, PrefixSegment<float> second,
                        size_t head_width, float scale, float*, float* out) {
  AttendEachKey(q, first, second, head_width, scale, out);
}
void AttendPrefixScalar(const double* q, PrefixSegment<double> first,
                        PrefixSegment<double> second, size_t head_width, double scale, double*,
                        double* out) {
  AttendEachKey(q, first, second, head_width, scale, out);
}

}  // namespace kvrt::simd
