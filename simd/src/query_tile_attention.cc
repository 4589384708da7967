// Run-time dispatch of AttendQueryTile (query_tile_attention.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "query_tile_attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "query_tile_attention-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {

// Queries in flight: a vector's lanes, at most kQueryTileMaxLanes (the scratch's unit).
void AttendQueryTileF32(const float* q, size_t q_stride, size_t queries, PrefixSegment<float> first,
                        PrefixSegment<float> second, size_t head_width, float scale, float* scratch,
                        float* out, size_t out_stride) {
  AttendQueryTileRows(hn::CappedTag<float, kQueryTileMaxLanes>(), q, q_stride, queries, first, second,
                      head_width, scale, scratch, out, out_stride);
}
void AttendQueryTileF64(const double* q, size_t q_stride, size_t queries, PrefixSegment<double> first,
                        PrefixSegment<double> second, size_t head_width, double scale, double* scratch,
                        double* out, size_t out_stride) {
  AttendQueryTileRows(hn::CappedTag<double, kQueryTileMaxLanes>(), q, q_stride, queries, first, second,
                      head_width, scale, scratch, out, out_stride);
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvrt::simd {

HWY_EXPORT(AttendQueryTileF32);
HWY_EXPORT(AttendQueryTileF64);

void AttendQueryTile(const float* q, size_t q_stride, size_t queries, PrefixSegment<float> first,
                     PrefixSegment<float> second, size_t head_width, float scale, float* scratch,
                     float* out, size_t out_stride) {
  HWY_DYNAMIC_DISPATCH(AttendQueryTileF32)(q, q_stride, queries, first, second, head_width, scale, scratch,
                                           out, out_stride);
}
void AttendQueryTile(const double* q, size_t q_stride, size_t queries, PrefixSegment<double> first,
                     PrefixSegment<double> second, size_t head_width, double scale, double* scratch,
                     double* out, size_t out_stride) {
  HWY_DYNAMIC_DISPATCH(AttendQueryTileF64)(q, q_stride, queries, first, second, head_width, scale, scratch,
                                           out, out_stride);
}

}  // namespace kvrt::simd
#endif  // HWY_ONCE
