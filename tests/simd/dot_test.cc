// Dot against DotScalar on every compiled target (dot.h).
#include <cmath>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "kvrt/simd/dot.h"
#include "simd_test_support.h"
#include "tested_targets.h"

namespace kvrt::simd {
namespace {

using simd_test::GuardedBuffer;
using simd_test::Inputs;

class DotTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(DotTest);

enum class DotInputs { kUniform, kHugeTimesTiny, kWideExponents, kSubnormalProducts };

template <class T>
void FillDotInputs(DotInputs kind, size_t n, Inputs& inputs, std::vector<T>& a,
                   std::vector<T>& b) {
  const bool is_float = sizeof(T) == 4;
  switch (kind) {
    case DotInputs::kUniform:
      a = inputs.Uniform<T>(n, -1, 1);
      b = inputs.Uniform<T>(n, -1, 1);
      break;
    case DotInputs::kHugeTimesTiny:  // 1e30·1e-30 (f32), 1e200·1e-200 (f64): O(1) products
      a = inputs.WideExponents<T>(n, is_float ? T(1e30) : T(1e200), 4);
      b = inputs.WideExponents<T>(n, is_float ? T(1e-30) : T(1e-200), 4);
      break;
    case DotInputs::kWideExponents:  // heavy cancellation between terms of very different size
      a = inputs.WideExponents<T>(n, 1, is_float ? 40 : 300);
      b = inputs.WideExponents<T>(n, 1, is_float ? 20 : 200);
      break;
    case DotInputs::kSubnormalProducts:  // every product below the normal range
      a = inputs.WideExponents<T>(n, is_float ? T(1e-21) : T(1e-156), 2);
      b = inputs.WideExponents<T>(n, is_float ? T(1e-21) : T(1e-156), 2);
      break;
  }
}

template <class T>
void ExpectDotMatchesTwin(DotInputs kind) {
  for (size_t n : simd_test::SweepSizes()) {
    for (size_t offset : simd_test::kMisalignments) {
      Inputs inputs(simd_test::CaseSeed(n, offset, static_cast<size_t>(kind)));
      std::vector<T> a_values, b_values;
      FillDotInputs(kind, n, inputs, a_values, b_values);
      GuardedBuffer<T> a(n, offset), b(n, (offset + 2) % 5);
      a.CopyFrom(a_values);
      b.CopyFrom(b_values);

      long double abs_sum = 0;
      for (size_t i = 0; i < n; ++i) abs_sum += std::fabs(static_cast<long double>(a[i]) * b[i]);
      const T fast = Dot(a.data(), b.data(), n);
      const T twin = DotScalar(a.data(), b.data(), n);
      // Both are sums of n products within γ_n·Σ|a·b| of the exact value.
      ASSERT_TRUE(simd_test::WithinBound(fast, twin, simd_test::SumOfProductsBound<T>(n, abs_sum)))
          << simd_test::TypeName<T>() << " n=" << n << " offset=" << offset;
    }
  }
}

// Products and partial sums of small integers are exact in any order.
template <class T>
void ExpectIntegerDotsExact() {
  for (size_t n : simd_test::SweepSizes()) {
    Inputs inputs(simd_test::CaseSeed(n, 77));
    const auto a = inputs.SmallIntegers<T>(n, 8);
    const auto b = inputs.SmallIntegers<T>(n, 8);
    ASSERT_EQ(Dot(a.data(), b.data(), n), DotScalar(a.data(), b.data(), n)) << "n=" << n;
  }
}

TEST_P(DotTest, F32UniformWithinDerivedBound) { ExpectDotMatchesTwin<float>(DotInputs::kUniform); }
TEST_P(DotTest, F64UniformWithinDerivedBound) { ExpectDotMatchesTwin<double>(DotInputs::kUniform); }
TEST_P(DotTest, F32HugeTimesTiny) { ExpectDotMatchesTwin<float>(DotInputs::kHugeTimesTiny); }
TEST_P(DotTest, F64HugeTimesTiny) { ExpectDotMatchesTwin<double>(DotInputs::kHugeTimesTiny); }
TEST_P(DotTest, F32WideExponents) { ExpectDotMatchesTwin<float>(DotInputs::kWideExponents); }
TEST_P(DotTest, F64WideExponents) { ExpectDotMatchesTwin<double>(DotInputs::kWideExponents); }
TEST_P(DotTest, F32SubnormalProducts) { ExpectDotMatchesTwin<float>(DotInputs::kSubnormalProducts); }
TEST_P(DotTest, F64SubnormalProducts) {
  ExpectDotMatchesTwin<double>(DotInputs::kSubnormalProducts);
}
TEST_P(DotTest, F32IntegersExact) { ExpectIntegerDotsExact<float>(); }
TEST_P(DotTest, F64IntegersExact) { ExpectIntegerDotsExact<double>(); }

// The suites above run once per target in this list; it must contain a portable
// baseline as well as the best target of this machine: HWY_SCALAR with g++ 12 (where
// Highway 1.0.3 disables EMU128 before gcc 12.3), HWY_EMU128 with clang.
TEST(SimdTargets, SweepIncludesPortableBaseline) {
  bool has_portable = false;
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    has_portable |= target == HWY_SCALAR || target == HWY_EMU128;
  }
  EXPECT_TRUE(has_portable);
}

}  // namespace
}  // namespace kvrt::simd
