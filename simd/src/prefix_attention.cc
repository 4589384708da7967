// Run-time dispatch of AttendPrefix (prefix_attention.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "prefix_attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "prefix_attention-inl.h"
#include "prefix_attention_rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {

void AttendPrefixF32(const float* q, PrefixSegment<float> first, PrefixSegment<float> second,
                     size_t head_width, float scale, float* scratch, float* out) {
  AttendPrefixRow(hn::ScalableTag<float>(), q, first, second, head_width, scale, scratch, out);
}
void AttendPrefixF64(const double* q, PrefixSegment<double> first, PrefixSegment<double> second,
                     size_t head_width, double scale, double* scratch, double* out) {
  AttendPrefixRow(hn::ScalableTag<double>(), q, first, second, head_width, scale, scratch, out);
}
void AttendPrefixF16(const float* q, PrefixSegment<Half> first, PrefixSegment<Half> second,
                     size_t head_width, float scale, float* scratch, float* out) {
  AttendPrefixRow(hn::ScalableTag<float>(), q, first, second, head_width, scale, scratch, out);
}
void AttendPrefixBf16(const float* q, PrefixSegment<Bf16> first, PrefixSegment<Bf16> second,
                      size_t head_width, float scale, float* scratch, float* out) {
  AttendPrefixRow(hn::ScalableTag<float>(), q, first, second, head_width, scale, scratch, out);
}
void AttendPrefixRowsF32(const float* q, size_t q_stride, size_t rows, PrefixSegment<float> first,
                         PrefixSegment<float> second, size_t head_width, float scale, float* scratch,
                         float* out, size_t out_stride) {
  AttendPrefixRowRange(hn::ScalableTag<float>(), q, q_stride, rows, first, second, head_width, scale,
                       scratch, out, out_stride);
}
void AttendPrefixRowsF64(const double* q, size_t q_stride, size_t rows, PrefixSegment<double> first,
                         PrefixSegment<double> second, size_t head_width, double scale,
                         double* scratch, double* out, size_t out_stride) {
  AttendPrefixRowRange(hn::ScalableTag<double>(), q, q_stride, rows, first, second, head_width, scale,
                       scratch, out, out_stride);
}

void AttendPrefixRowsF16(const float* q, size_t q_stride, size_t rows, PrefixSegment<Half> first,
                         PrefixSegment<Half> second, size_t head_width, float scale, float* scratch,
                         float* out, size_t out_stride) {
  AttendPrefixRowRange(hn::ScalableTag<float>(), q, q_stride, rows, first, second, head_width, scale,
                       scratch, out, out_stride);
}

void AttendPrefixRowsBf16(const float* q, size_t q_stride, size_t rows, PrefixSegment<Bf16> first,
                          PrefixSegment<Bf16> second, size_t head_width, float scale, float* scratch,
                          float* out, size_t out_stride) {
  AttendPrefixRowRange(hn::ScalableTag<float>(), q, q_stride, rows, first, second, head_width, scale,
                       scratch, out, out_stride);
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvrt::simd {

HWY_EXPORT(AttendPrefixF32);
HWY_EXPORT(AttendPrefixF64);
HWY_EXPORT(AttendPrefixRowsF32);
HWY_EXPORT(AttendPrefixRowsF64);
HWY_EXPORT(AttendPrefixF16);
HWY_EXPORT(AttendPrefixRowsF16);
HWY_EXPORT(AttendPrefixBf16);
HWY_EXPORT(AttendPrefixRowsBf16);

void AttendPrefix(const float* q, PrefixSegment<float> first, PrefixSegment<float> second,
                  size_t head_width, float scale, float* scratch, float* out) {
  HWY_DYNAMIC_DISPATCH(AttendPrefixF32)(q, first, second, head_width, scale, scratch, out);
}
void AttendPrefix(const double* q, PrefixSegment<double> first, PrefixSegment<double> second,
                  size_t head_width, double scale, double* scratch, double* out) {
  HWY_DYNAMIC_DISPATCH(AttendPrefixF64)(q, first, second, head_width, scale, scratch, out);
}

void AttendPrefixRows(const float* q, size_t q_stride, size_t rows, PrefixSegment<float> first,
                      PrefixSegment<float> second, size_t head_width, float scale, float* scratch,
                      float* out, size_t out_stride) {
  HWY_DYNAMIC_DISPATCH(AttendPrefixRowsF32)(q, q_stride, rows, first, second, head_width, scale,
                                            scratch, out, out_stride);
}
void AttendPrefixRows(const double* q, size_t q_stride, size_t rows, PrefixSegment<double> first,
                      PrefixSegment<double> second, size_t head_width, double scale,
                      double* scratch, double* out, size_t out_stride) {
  HWY_DYNAMIC_DISPATCH(AttendPrefixRowsF64)(q, q_stride, rows, first, second, head_width, scale,
                                            scratch, out, out_stride);
}

void AttendPrefix(const float* q, PrefixSegment<Half> first, PrefixSegment<Half> second,
                  size_t head_width, float scale, float* scratch, float* out) {
  HWY_DYNAMIC_DISPATCH(AttendPrefixF16)(q, first, second, head_width, scale, scratch, out);
}
void AttendPrefixRows(const float* q, size_t q_stride, size_t rows, PrefixSegment<Half> first,
                      PrefixSegment<Half> second, size_t head_width, float scale, float* scratch,
                      float* out, size_t out_stride) {
  HWY_DYNAMIC_DISPATCH(AttendPrefixRowsF16)(q, q_stride, rows, first, second, head_width, scale,
                                            scratch, out, out_stride);
}

void AttendPrefix(const float* q, PrefixSegment<Bf16> first, PrefixSegment<Bf16> second,
                  size_t head_width, float scale, float* scratch, float* out) {
  HWY_DYNAMIC_DISPATCH(AttendPrefixBf16)(q, first, second, head_width, scale, scratch, out);
}
void AttendPrefixRows(const float* q, size_t q_stride, size_t rows, PrefixSegment<Bf16> first,
                      PrefixSegment<Bf16> second, size_t head_width, float scale, float* scratch,
                      float* out, size_t out_stride) {
  HWY_DYNAMIC_DISPATCH(AttendPrefixRowsBf16)(q, q_stride, rows, first, second, head_width, scale,
                                             scratch, out, out_stride);
}

}  // namespace kvrt::simd
#endif  // HWY_ONCE
