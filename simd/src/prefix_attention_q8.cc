// Run-time dispatch of AttendPrefix and AttendPrefixRows over q8_0 K/V rows
// (prefix_attention.h), apart from the other element types so that the compiler
// builds the two translation units side by side.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "prefix_attention_q8.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "prefix_attention-inl.h"
#include "prefix_attention_rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {

void AttendPrefixQ8(const float* q, PrefixSegment<Q8> first, PrefixSegment<Q8> second, size_t head_width,
                    float scale, float* scratch, float* out) {
  AttendPrefixRow(hn::ScalableTag<float>(), q, first, second, head_width, scale, scratch, out);
}

void AttendPrefixRowsQ8(const float* q, size_t q_stride, size_t rows, PrefixSegment<Q8> first,
                        PrefixSegment<Q8> second, size_t head_width, float scale, float* scratch, float* out,
                        size_t out_stride) {
  AttendPrefixRowRange(hn::ScalableTag<float>(), q, q_stride, rows, first, second, head_width, scale, scratch,
                       out, out_stride);
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvrt::simd {

HWY_EXPORT(AttendPrefixQ8);
HWY_EXPORT(AttendPrefixRowsQ8);

void AttendPrefix(const float* q, PrefixSegment<Q8> first, PrefixSegment<Q8> second, size_t head_width,
                  float scale, float* scratch, float* out) {
  HWY_DYNAMIC_DISPATCH(AttendPrefixQ8)(q, first, second, head_width, scale, scratch, out);
}

void AttendPrefixRows(const float* q, size_t q_stride, size_t rows, PrefixSegment<Q8> first,
                      PrefixSegment<Q8> second, size_t head_width, float scale, float* scratch, float* out,
                      size_t out_stride) {
  HWY_DYNAMIC_DISPATCH(AttendPrefixRowsQ8)(q, q_stride, rows, first, second, head_width, scale, scratch, out,
                                           out_stride);
}

}  // namespace kvrt::simd
#endif  // HWY_ONCE
