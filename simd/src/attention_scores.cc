// Run-time dispatch of AttentionScores (attention_scores.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "attention_scores.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "attention_scores-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {

void AttentionScoresF32(const float* q, const float* keys, size_t key_stride, size_t count,
                        size_t head_width, float scale, float* out) {
  ScoreKeys(hn::ScalableTag<float>(), q, keys, key_stride, count, head_width, scale, out);
}
void AttentionScoresF64(const double* q, const double* keys, size_t key_stride, size_t count,
                        size_t head_width, double scale, double* out) {
  ScoreKeys(hn::ScalableTag<double>(), q, keys, key_stride, count, head_width, scale, out);
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kvrt/simd/attention_scores.h"

namespace kvrt::simd {

HWY_EXPORT(AttentionScoresF32);
HWY_EXPORT(AttentionScoresF64);

void AttentionScores(const float* q, const float* keys, size_t key_stride, size_t count,
                     size_t head_width, float scale, float* out) {
  HWY_DYNAMIC_DISPATCH(AttentionScoresF32)(q, keys, key_stride, count, head_width, scale, out);
}
void AttentionScores(const double* q, const double* keys, size_t key_stride, size_t count,
                     size_t head_width, double scale, double* out) {
  HWY_DYNAMIC_DISPATCH(AttentionScoresF64)(q, keys, key_stride, count, head_width, scale, out);
}

}  // namespace kvrt::simd
#endif  // HWY_ONCE
