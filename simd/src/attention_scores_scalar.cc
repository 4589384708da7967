#include "kvrt/simd/attention_scores.h"
#include "kvrt/simd/dot.h"

namespace kvrt::simd {
namespace {

// The reference forward's score loop: one ascending dot per key, then the scale.
template <class T>
void ScoreEachKey(const T* q, const T* keys, size_t key_stride, size_t count, size_t head_width,
                  T scale, T* out) {
  for (size_t p = 0; p < count; ++p) out[p] = DotScalar(q, keys + p * key_stride, head_width) * scale;
}

}  // namespace

void AttentionScoresScalar(const float* q, const float* keys, size_t key_stride, size_t count,
                           size_t head_width, float scale, float* out) {
  ScoreEachKey(q, keys, key_stride, count, head_width, scale, out);
}
void AttentionScoresScalar(const double* q, const double* keys, size_t key_stride, size_t count,
                           size_t head_width, double scale, double* out) {
  ScoreEachKey(q, keys, key_stride, count, head_width, scale, out);
}

}  // namespace kvrt::simd
