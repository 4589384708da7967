// Softmax against SoftmaxScalar on every compiled target (softmax.h).
#include <algorithm>
#include <cmath>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "kvrt/simd/softmax.h"
#include "simd_test_support.h"
#include "tested_targets.h"

namespace kvrt::simd {
namespace {

using simd_test::GuardedBuffer;
using simd_test::Inputs;

class SoftmaxTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(SoftmaxTest);

// Error of one exp: Highway's Exp documents ≤ 1 ULP (hwy/contrib/math/math-inl.h),
// glibc's exp/expf are within 1 ULP as well.
constexpr long double kExpUlp = 1;

// Both results are e_i / D with e_i within kExpUlp·ε (fast) and 1·ε (twin) of
// exp(x_i − max) (the shift itself is computed identically), D a sum of n positive
// terms within γ_n + (exp error) of its exact value; the twin divides once (u), the
// fast kernel rounds 1/D and e·(1/D) (2u):
//   |fast − twin| ≤ (n + 2·kExpUlp + 4)·ε·p.
// Exps of shifts below ≈ −87 (f32) / −708 (f64) are subnormal or flushed to zero by
// Highway, an absolute error below min_normal each; D ≥ 1, so 2·min_normal covers it.
template <class T>
long double SoftmaxBound(size_t n, T fast, T twin) {
  const long double p = std::max(std::fabs(static_cast<long double>(fast)),
                                 std::fabs(static_cast<long double>(twin)));
  return (static_cast<long double>(n) + 2 * kExpUlp + 4) * simd_test::Epsilon<T>() * p +
         2 * simd_test::MinNormal<T>();
}

enum class SoftmaxInputs {
  kUniform,       // logits in [−8, 8)
  kTies,          // values from {−1, 2}: the maximum repeats many times
  kMinusHuge,     // most entries −1e30: exp underflows to exactly 0
  kHugeLogits,    // 1e30 (f32) / 1e200 (f64) scale with relative jitter: one winner
  kSubnormal,     // every input subnormal: a uniform distribution
  kSpread,        // shifts spanning the underflow boundary of exp
};

template <class T>
std::vector<T> MakeLogits(SoftmaxInputs kind, size_t n, Inputs& inputs) {
  const bool is_float = sizeof(T) == 4;
  switch (kind) {
    case SoftmaxInputs::kUniform:
      return inputs.Uniform<T>(n, -8, 8);
    case SoftmaxInputs::kTies: {
      auto x = inputs.SmallIntegers<T>(n, 1);
      for (T& v : x) v = v > 0 ? T(2) : T(-1);
      return x;
    }
    case SoftmaxInputs::kMinusHuge: {
      auto x = inputs.Uniform<T>(n, -4, 4);
      for (size_t i = 0; i < n; ++i) {
        if (i % 7 != 3) x[i] = T(-1e30);
      }
      return x;
    }
    case SoftmaxInputs::kHugeLogits: {
      const T scale = is_float ? T(1e30) : T(1e200);
      auto x = inputs.Uniform<T>(n, T(1), T(1.000001));
      for (T& v : x) v *= scale;
      return x;
    }
    case SoftmaxInputs::kSubnormal:
      return inputs.WideExponents<T>(n, std::numeric_limits<T>::denorm_min() * 1000, 8);
    case SoftmaxInputs::kSpread:
      return inputs.Uniform<T>(n, is_float ? T(-120) : T(-800), 0);
  }
  return {};
}

template <class T>
void ExpectSoftmaxMatchesTwin(SoftmaxInputs kind) {
  for (size_t n : simd_test::SweepSizes()) {
    for (size_t offset : simd_test::kMisalignments) {
      Inputs inputs(simd_test::CaseSeed(n, offset, static_cast<size_t>(kind)));
      const auto logits = MakeLogits<T>(kind, n, inputs);
      GuardedBuffer<T> in(n, offset), out(n, (offset + 1) % 4);
      in.CopyFrom(logits);
      std::vector<T> twin(n);
      SoftmaxScalar(logits.data(), twin.data(), n);
      Softmax(in.data(), out.data(), n);
      ASSERT_TRUE(out.GuardsIntact()) << "n=" << n;
      ASSERT_EQ(in.ToVector(), logits) << "input modified, n=" << n;
      for (size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(simd_test::WithinBound(out[i], twin[i], SoftmaxBound(n, out[i], twin[i])))
            << simd_test::TypeName<T>() << " n=" << n << " offset=" << offset << " i=" << i;
      }
    }
  }
}

// in == out computes the same bits as separate rows.
template <class T>
void ExpectInPlaceEqualsOutOfPlace() {
  for (size_t n : simd_test::SweepSizes()) {
    Inputs inputs(simd_test::CaseSeed(n, 11));
    auto row = inputs.Uniform<T>(n, -8, 8);
    std::vector<T> separate(n);
    Softmax(row.data(), separate.data(), n);
    Softmax(row.data(), row.data(), n);
    ASSERT_TRUE(simd_test::SameBits(row.data(), separate.data(), n)) << "n=" << n;
  }
}

TEST_P(SoftmaxTest, F32Uniform) { ExpectSoftmaxMatchesTwin<float>(SoftmaxInputs::kUniform); }
TEST_P(SoftmaxTest, F64Uniform) { ExpectSoftmaxMatchesTwin<double>(SoftmaxInputs::kUniform); }
TEST_P(SoftmaxTest, F32Ties) { ExpectSoftmaxMatchesTwin<float>(SoftmaxInputs::kTies); }
TEST_P(SoftmaxTest, F64Ties) { ExpectSoftmaxMatchesTwin<double>(SoftmaxInputs::kTies); }
TEST_P(SoftmaxTest, F32MinusHuge) { ExpectSoftmaxMatchesTwin<float>(SoftmaxInputs::kMinusHuge); }
TEST_P(SoftmaxTest, F64MinusHuge) { ExpectSoftmaxMatchesTwin<double>(SoftmaxInputs::kMinusHuge); }
TEST_P(SoftmaxTest, F32HugeLogits) { ExpectSoftmaxMatchesTwin<float>(SoftmaxInputs::kHugeLogits); }
TEST_P(SoftmaxTest, F64HugeLogits) {
  ExpectSoftmaxMatchesTwin<double>(SoftmaxInputs::kHugeLogits);
}
TEST_P(SoftmaxTest, F32Subnormal) { ExpectSoftmaxMatchesTwin<float>(SoftmaxInputs::kSubnormal); }
TEST_P(SoftmaxTest, F64Subnormal) { ExpectSoftmaxMatchesTwin<double>(SoftmaxInputs::kSubnormal); }
TEST_P(SoftmaxTest, F32UnderflowSpread) { ExpectSoftmaxMatchesTwin<float>(SoftmaxInputs::kSpread); }
TEST_P(SoftmaxTest, F64UnderflowSpread) {
  ExpectSoftmaxMatchesTwin<double>(SoftmaxInputs::kSpread);
}
TEST_P(SoftmaxTest, F32InPlace) { ExpectInPlaceEqualsOutOfPlace<float>(); }
TEST_P(SoftmaxTest, F64InPlace) { ExpectInPlaceEqualsOutOfPlace<double>(); }

}  // namespace
}  // namespace kvrt::simd
