// Scalar twin of AttendQueryTile (query_tile_attention.h): every query over its
// own causal prefix with AttendPrefixScalar, the formula in ascending p.
#include "kvrt/simd/query_tile_attention.h"

namespace kvrt::simd {
namespace {

template <class T>
void AttendEachQuery(const T* q, size_t q_stride, size_t queries, PrefixSegment<T> first,
                     PrefixSegment<T> second, size_t head_width, T scale, T* scratch, T* out,
                     size_t out_stride) {
  const size_t n = first.count + second.count;
  for (size_t r = 0; r < queries; ++r) {
    const size_t visible = n - (queries - 1 - r);
    PrefixSegment<T> own_first = first, own_second = second;
    if (visible <= first.count) {
      own_first.count = visible;
      own_second.count = 0;
    } else {
      own_second.count = visible - first.count;
    }
    AttendPrefixScalar(q + r * q_stride, own_first, own_second, head_width, scale, scratch,
                       out + r * out_stride);
  }
}

}  // namespace

void AttendQueryTileScalar(const float* q, size_t q_stride, size_t queries, PrefixSegment<float> first,
                           PrefixSegment<float> second, size_t head_width, float scale, float* scratch,
                           float* out, size_t out_stride) {
  AttendEachQuery(q, q_stride, queries, first, second, head_width, scale, scratch, out, out_stride);
}
void AttendQueryTileScalar(const double* q, size_t q_stride, size_t queries,
                           PrefixSegment<double> first, PrefixSegment<double> second,
                           size_t head_width, double scale, double* scratch, double* out,
                           size_t out_stride) {
  AttendEachQuery(q, q_stride, queries, first, second, head_width, scale, scratch, out, out_stride);
}

}  // namespace kvrt::simd
