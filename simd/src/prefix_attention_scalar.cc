#include <cmath>
#include <limits>
#include <vector>

#include "kvrt/simd/compressed_matrix.h"
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

float Widen(const Half* x) { return F16ToF32(x->bits); }
float Widen(const Bf16* x) { return Bf16ToF32(x->bits); }
float Widen(Q8Rows x) { return x.value(); }

// A 16-bit or q8_0 segment widened to f32 (exact), row by row: the values the f16,
// bf16 and q8_0 kernels compute on.
template <class K>
std::vector<float> Widened(const PrefixSegment<K>& segment, size_t head_width, bool keys) {
  std::vector<float> rows(segment.count * head_width);
  const KvPointer<K> base = keys ? segment.keys : segment.values;
  for (size_t p = 0; p < segment.count; ++p) {
    for (size_t j = 0; j < head_width; ++j) rows[p * head_width + j] = Widen(base + (p * segment.stride + j));
  }
  return rows;
}

// The f32 twin on the widened rows.
template <class K>
void AttendWidened(const float* q, const PrefixSegment<K>& first, const PrefixSegment<K>& second,
                   size_t head_width, float scale, float* out) {
  const std::vector<float> first_keys = Widened(first, head_width, true);
  const std::vector<float> first_values = Widened(first, head_width, false);
  const std::vector<float> second_keys = Widened(second, head_width, true);
  const std::vector<float> second_values = Widened(second, head_width, false);
  AttendEachKey(q, PrefixSegment<float>{first_keys.data(), first_values.data(), head_width, first.count},
                PrefixSegment<float>{second_keys.data(), second_values.data(), head_width, second.count},
                head_width, scale, out);
}

}  // namespace

void AttendPrefixScalar(const float* q, PrefixSegment<Half> first, PrefixSegment<Half> second,
                        size_t head_width, float scale, float*, float* out) {
  AttendWidened(q, first, second, head_width, scale, out);
}
void AttendPrefixScalar(const float* q, PrefixSegment<Bf16> first, PrefixSegment<Bf16> second,
                        size_t head_width, float scale, float*, float* out) {
  AttendWidened(q, first, second, head_width, scale, out);
}

void AttendPrefixScalar(const float* q, PrefixSegment<Q8> first, PrefixSegment<Q8> second, size_t head_width,
                        float scale, float*, float* out) {
  AttendWidened(q, first, second, head_width, scale, out);
}
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
