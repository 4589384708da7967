// MixValues against MixValuesScalar on every compiled target (mix_values.h).
#include <cmath>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "kvrt/simd/mix_values.h"
#include "simd_test_support.h"
#include "tested_targets.h"

namespace kvrt::simd {
namespace {

using simd_test::GuardedBuffer;
using simd_test::Inputs;

class MixValuesTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(MixValuesTest);

enum class MixInputs { kSoftmaxWeights, kSignedWeights, kLarge, kSubnormal };

template <class T>
void ExpectMixMatchesTwin(MixInputs kind) {
  const bool is_float = sizeof(T) == 4;
  std::vector<size_t> widths;
  for (size_t h = 0; h <= 130; ++h) widths.push_back(h);
  widths.push_back(256);
  for (size_t head_width : widths) {
    for (size_t count : {0, 1, 2, 3, 4, 5, 17, 64, 301}) {
      const size_t stride = head_width + 3;
      Inputs inputs(simd_test::CaseSeed(head_width, count, static_cast<size_t>(kind)));
      std::vector<T> weights, values;
      switch (kind) {
        case MixInputs::kSoftmaxWeights:  // what attention feeds it: positive, summing to ~1
          weights = inputs.Uniform<T>(count, 0, T(2) / static_cast<T>(count + 1));
          values = inputs.Uniform<T>(count * stride, -3, 3);
          break;
        case MixInputs::kSignedWeights:
          weights = inputs.WideExponents<T>(count, 1, 10);
          values = inputs.WideExponents<T>(count * stride, 1, 10);
          break;
        case MixInputs::kLarge:
          weights = inputs.Uniform<T>(count, -1, 1);
          values = inputs.WideExponents<T>(count * stride, is_float ? T(1e30) : T(1e200), 4);
          break;
        case MixInputs::kSubnormal:
          weights = inputs.Uniform<T>(count, -1, 1);
          values = inputs.WideExponents<T>(count * stride, std::numeric_limits<T>::min(), 8);
          break;
      }
      GuardedBuffer<T> weight_buffer(count, 1), value_buffer(count * stride, 2), out(head_width, 3);
      weight_buffer.CopyFrom(weights);
      value_buffer.CopyFrom(values);
      std::vector<T> twin(head_width);
      MixValuesScalar(weights.data(), values.data(), stride, count, head_width, twin.data());
      MixValues(weight_buffer.data(), value_buffer.data(), stride, count, head_width, out.data());
      ASSERT_TRUE(out.GuardsIntact());
      for (size_t j = 0; j < head_width; ++j) {
        // Column j is a sum of `count` products (two FMA chains vs. the twin's
        // ascending rounded products): SumOfProductsBound over |w_p·v_p[j]|.
        long double abs_sum = 0;
        for (size_t p = 0; p < count; ++p) {
          abs_sum += std::fabs(static_cast<long double>(weights[p]) * values[p * stride + j]);
        }
        ASSERT_TRUE(simd_test::WithinBound(out[j], twin[j],
                                           simd_test::SumOfProductsBound<T>(count, abs_sum)))
            << simd_test::TypeName<T>() << " head_width=" << head_width << " count=" << count
            << " j=" << j;
      }
    }
  }
}

TEST_P(MixValuesTest, F32SoftmaxWeights) { ExpectMixMatchesTwin<float>(MixInputs::kSoftmaxWeights); }
TEST_P(MixValuesTest, F64SoftmaxWeights) {
  ExpectMixMatchesTwin<double>(MixInputs::kSoftmaxWeights);
}
TEST_P(MixValuesTest, F32SignedWeights) { ExpectMixMatchesTwin<float>(MixInputs::kSignedWeights); }
TEST_P(MixValuesTest, F64SignedWeights) { ExpectMixMatchesTwin<double>(MixInputs::kSignedWeights); }
TEST_P(MixValuesTest, F32Large) { ExpectMixMatchesTwin<float>(MixInputs::kLarge); }
TEST_P(MixValuesTest, F64Large) { ExpectMixMatchesTwin<double>(MixInputs::kLarge); }
TEST_P(MixValuesTest, F32Subnormal) { ExpectMixMatchesTwin<float>(MixInputs::kSubnormal); }
TEST_P(MixValuesTest, F64Subnormal) { ExpectMixMatchesTwin<double>(MixInputs::kSubnormal); }

}  // namespace
}  // namespace kvrt::simd
