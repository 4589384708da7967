// ScaledAccumulate against ScaledAccumulateScalar on every compiled target.
#include <cmath>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "kvrt/simd/scaled_accumulate.h"
#include "simd_test_support.h"
#include "tested_targets.h"

namespace kvrt::simd {
namespace {

using simd_test::GuardedBuffer;
using simd_test::Inputs;

class ScaledAccumulateTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(ScaledAccumulateTest);

// twin = (y + (w·x)(1+δ1))(1+δ2), fast = (y + w·x)(1+δ3) with |δ| ≤ u = ε/2
// (fast = twin on targets without FMA), so
//   |fast − twin| ≤ 2u·|y + w·x| + u(1+u)·|w·x| ≤ ε·(|y + w·x| + |w·x|),
// plus denorm_min when w·x rounds in the subnormal range.
template <class T>
long double AccumulateBound(T w, T x, T y) {
  const long double product = static_cast<long double>(w) * x;
  return simd_test::Epsilon<T>() * (std::fabs(y + product) + std::fabs(product)) +
         simd_test::DenormMin<T>();
}

enum class AccumulateInputs { kUniform, kLarge, kSubnormal };

template <class T>
void ExpectAccumulateMatchesTwin(AccumulateInputs kind) {
  const bool is_float = sizeof(T) == 4;
  for (size_t n : simd_test::SweepSizes()) {
    for (size_t offset : simd_test::kMisalignments) {
      Inputs inputs(simd_test::CaseSeed(n, offset, static_cast<size_t>(kind)));
      std::vector<T> x, y;
      T w = T(0.75);
      switch (kind) {
        case AccumulateInputs::kUniform:
          x = inputs.Uniform<T>(n, -1, 1);
          y = inputs.Uniform<T>(n, -1, 1);
          w = inputs.Uniform<T>(1, -2, 2)[0];
          break;
        case AccumulateInputs::kLarge:  // products and sums near 1e30 (f32) / 1e200 (f64)
          x = inputs.WideExponents<T>(n, is_float ? T(1e15) : T(1e100), 8);
          y = inputs.WideExponents<T>(n, is_float ? T(1e30) : T(1e200), 8);
          w = is_float ? T(-3e14) : T(-3e99);
          break;
        case AccumulateInputs::kSubnormal:
          x = inputs.WideExponents<T>(n, std::numeric_limits<T>::min(), 6);
          y = inputs.WideExponents<T>(n, std::numeric_limits<T>::denorm_min() * 64, 4);
          w = T(0.3);
          break;
      }
      GuardedBuffer<T> x_buffer(n, offset), y_buffer(n, (offset + 3) % 4);
      x_buffer.CopyFrom(x);
      y_buffer.CopyFrom(y);
      std::vector<T> twin = y;
      ScaledAccumulateScalar(w, x.data(), twin.data(), n);
      ScaledAccumulate(w, x_buffer.data(), y_buffer.data(), n);
      ASSERT_TRUE(y_buffer.GuardsIntact()) << "n=" << n;
      for (size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(simd_test::WithinBound(y_buffer[i], twin[i], AccumulateBound(w, x[i], y[i])))
            << simd_test::TypeName<T>() << " n=" << n << " offset=" << offset << " i=" << i;
      }
    }
  }
}

// y += w·y (x == y) reads every element before writing it.
template <class T>
void ExpectAliasedMatchesTwin() {
  for (size_t n : simd_test::SweepSizes()) {
    Inputs inputs(simd_test::CaseSeed(n, 5));
    auto fast = inputs.Uniform<T>(n, -1, 1);
    auto twin = fast;
    const auto original = fast;
    ScaledAccumulate(T(0.5), fast.data(), fast.data(), n);
    ScaledAccumulateScalar(T(0.5), twin.data(), twin.data(), n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_TRUE(simd_test::WithinBound(fast[i], twin[i],
                                         AccumulateBound(T(0.5), original[i], original[i])))
          << "n=" << n << " i=" << i;
    }
  }
}

TEST_P(ScaledAccumulateTest, F32Uniform) {
  ExpectAccumulateMatchesTwin<float>(AccumulateInputs::kUniform);
}
TEST_P(ScaledAccumulateTest, F64Uniform) {
  ExpectAccumulateMatchesTwin<double>(AccumulateInputs::kUniform);
}
TEST_P(ScaledAccumulateTest, F32Large) { ExpectAccumulateMatchesTwin<float>(AccumulateInputs::kLarge); }
TEST_P(ScaledAccumulateTest, F64Large) {
  ExpectAccumulateMatchesTwin<double>(AccumulateInputs::kLarge);
}
TEST_P(ScaledAccumulateTest, F32Subnormal) {
  ExpectAccumulateMatchesTwin<float>(AccumulateInputs::kSubnormal);
}
TEST_P(ScaledAccumulateTest, F64Subnormal) {
  ExpectAccumulateMatchesTwin<double>(AccumulateInputs::kSubnormal);
}
TEST_P(ScaledAccumulateTest, F32InPlace) { ExpectAliasedMatchesTwin<float>(); }
TEST_P(ScaledAccumulateTest, F64InPlace) { ExpectAliasedMatchesTwin<double>(); }

}  // namespace
}  // namespace kvrt::simd
