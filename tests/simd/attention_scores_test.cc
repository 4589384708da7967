// AttentionScores against AttentionScoresScalar on every compiled target.
#include <cmath>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "kvrt/simd/attention_scores.h"
#include "simd_test_support.h"
#include "tested_targets.h"

namespace kvrt::simd {
namespace {

using simd_test::GuardedBuffer;
using simd_test::Inputs;

class AttentionScoresTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(AttentionScoresTest);

// Each score is a dot of h = head_width products (the fast and twin sums differ by
// the SumOfProductsBound, see simd_test_support.h), then multiplied by scale with
// one rounding each: |fast − twin| ≤ |scale|·SumOfProductsBound + ε·|twin|.
template <class T>
long double ScoreBound(const T* q, const T* key, size_t head_width, T scale, T twin) {
  long double abs_sum = 0;
  for (size_t i = 0; i < head_width; ++i) abs_sum += std::fabs(static_cast<long double>(q[i]) * key[i]);
  return std::fabs(static_cast<long double>(scale)) *
             simd_test::SumOfProductsBound<T>(head_width, abs_sum) +
         simd_test::Epsilon<T>() * std::fabs(static_cast<long double>(twin));
}

template <class T>
void ExpectScoresMatchTwin(bool large_magnitudes) {
  const bool is_float = sizeof(T) == 4;
  std::vector<size_t> widths;
  for (size_t h = 0; h <= 130; ++h) widths.push_back(h);
  widths.push_back(256);
  for (size_t head_width : widths) {
    for (size_t count : {0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 50}) {
      for (size_t padding : {0, 5}) {  // keys packed back to back, or strided
        const size_t stride = head_width + padding;
        Inputs inputs(simd_test::CaseSeed(head_width, count, padding));
        const T big = large_magnitudes ? (is_float ? T(1e30) : T(1e200)) : T(1);
        const T small = large_magnitudes ? 1 / big : T(1);
        const auto q = inputs.WideExponents<T>(head_width, big, 2);
        const auto keys = inputs.WideExponents<T>(count * stride, small, 2);
        const T scale = T(1) / std::sqrt(static_cast<T>(head_width + 1));
        GuardedBuffer<T> q_buffer(head_width, 1), key_buffer(count * stride, 3), out(count, 2);
        q_buffer.CopyFrom(q);
        key_buffer.CopyFrom(keys);
        std::vector<T> twin(count);
        AttentionScoresScalar(q.data(), keys.data(), stride, count, head_width, scale, twin.data());
        AttentionScores(q_buffer.data(), key_buffer.data(), stride, count, head_width, scale,
                        out.data());
        ASSERT_TRUE(out.GuardsIntact());
        for (size_t p = 0; p < count; ++p) {
          const long double bound =
              ScoreBound(q.data(), keys.data() + p * stride, head_width, scale, twin[p]);
          ASSERT_TRUE(simd_test::WithinBound(out[p], twin[p], bound))
              << simd_test::TypeName<T>() << " head_width=" << head_width << " count=" << count
              << " p=" << p;
        }
      }
    }
  }
}

// A key's score does not depend on how many keys share the call or where the call
// starts: the group of sixteen (reduced together on AVX3), the groups of four and the
// single-key remainder give the same bits.
template <class T>
void ExpectScoreIndependentOfCount() {
  constexpr size_t kKeys = 41;
  for (size_t head_width : {1, 16, 48, 64, 67, 128}) {
    Inputs inputs(simd_test::CaseSeed(head_width, 4));
    const auto q = inputs.Uniform<T>(head_width, -1, 1);
    const auto keys = inputs.Uniform<T>(kKeys * head_width, -1, 1);
    std::vector<T> single(kKeys);
    for (size_t p = 0; p < kKeys; ++p) {
      AttentionScores(q.data(), keys.data() + p * head_width, head_width, 1, head_width, T(0.125),
                      &single[p]);
    }
    for (size_t first : {0, 1, 3, 16, 25}) {
      std::vector<T> all(kKeys - first);
      AttentionScores(q.data(), keys.data() + first * head_width, head_width, kKeys - first, head_width,
                      T(0.125), all.data());
      for (size_t p = first; p < kKeys; ++p) {
        ASSERT_TRUE(simd_test::SameBits(&single[p], &all[p - first], 1))
            << "head_width=" << head_width << " first=" << first << " p=" << p;
      }
    }
  }
}

TEST_P(AttentionScoresTest, F32Uniform) { ExpectScoresMatchTwin<float>(false); }
TEST_P(AttentionScoresTest, F64Uniform) { ExpectScoresMatchTwin<double>(false); }
TEST_P(AttentionScoresTest, F32HugeTimesTiny) { ExpectScoresMatchTwin<float>(true); }
TEST_P(AttentionScoresTest, F64HugeTimesTiny) { ExpectScoresMatchTwin<double>(true); }
TEST_P(AttentionScoresTest, F32IndependentOfCount) { ExpectScoreIndependentOfCount<float>(); }
TEST_P(AttentionScoresTest, F64IndependentOfCount) { ExpectScoreIndependentOfCount<double>(); }

}  // namespace
}  // namespace kvrt::simd
