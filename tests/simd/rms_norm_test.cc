// RmsNorm against RmsNormScalar on every compiled target (rms_norm.h).
#include <cmath>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "kvrt/simd/rms_norm.h"
#include "simd_test_support.h"

namespace kvrt::simd {
namespace {

using simd_test::GuardedBuffer;
using simd_test::Inputs;

class RmsNormTest : public hwy::TestWithParamTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(RmsNormTest);

// Relative difference of inv between the kernels, from rms_norm.h:
//  - both Σx² are sums of n positive products within γ_n ≈ n·ε/2, and inv depends on
//    the sum through a square root, which halves relative errors: n·ε/2 for the pair,
//    plus the rounding of s/n and of + eps (ε for the pair, halved: ε/2 each);
//  - the twin's log is within 1 ULP of L = ln(ms + eps); multiplied by −0.5 and fed
//    to exp that becomes |L|·ε/2, plus 1 ULP of the exp itself;
//  - the fast 1/sqrt rounds twice (ε).
// (n/2 + |L|/2 + 3)·ε covers the sum. Outputs add the twin's two roundings twice.
template <class T>
long double InverseRelativeBound(const std::vector<T>& x, T epsilon) {
  long double sum = 0;
  for (T v : x) sum += static_cast<long double>(v) * v;
  const long double mean_plus_eps = sum / x.size() + epsilon;
  const long double log_term = std::fabs(std::log(mean_plus_eps));
  return (x.size() / 2.0L + log_term / 2 + 3) * simd_test::Epsilon<T>();
}

struct RmsCase {
  const char* name;
  double scale;  // magnitudes of x around scale·2^±spread
  int spread;
  double epsilon;
};

template <class T>
void ExpectRmsNormMatchesTwin(const RmsCase& rms_case) {
  for (size_t n : simd_test::SweepSizes()) {
    if (n == 0) continue;  // the mean of an empty row is undefined (n ≥ 1)
    for (size_t offset : simd_test::kMisalignments) {
      Inputs inputs(simd_test::CaseSeed(n, offset));
      const auto x = inputs.WideExponents<T>(n, static_cast<T>(rms_case.scale), rms_case.spread);
      const auto gain = inputs.Uniform<T>(n, T(0.5), T(1.5));
      const T epsilon = static_cast<T>(rms_case.epsilon);
      GuardedBuffer<T> x_buffer(n, offset), gain_buffer(n, 0), y(n, (offset + 1) % 4);
      x_buffer.CopyFrom(x);
      gain_buffer.CopyFrom(gain);
      std::vector<T> twin(n);
      const T twin_inverse = RmsNormScalar(x.data(), gain.data(), epsilon, twin.data(), n);
      const T fast_inverse = RmsNorm(x_buffer.data(), gain_buffer.data(), epsilon, y.data(), n);
      ASSERT_TRUE(y.GuardsIntact());

      const long double relative = InverseRelativeBound(x, epsilon);
      ASSERT_TRUE(simd_test::WithinBound(fast_inverse, twin_inverse,
                                         relative * std::fabs(twin_inverse)))
          << rms_case.name << " " << simd_test::TypeName<T>() << " n=" << n;
      for (size_t i = 0; i < n; ++i) {
        const long double bound = (relative + 2 * simd_test::Epsilon<T>()) *
                                      std::fabs(static_cast<long double>(twin[i])) +
                                  simd_test::DenormMin<T>();
        ASSERT_TRUE(simd_test::WithinBound(y[i], twin[i], bound))
            << rms_case.name << " " << simd_test::TypeName<T>() << " n=" << n << " i=" << i;
      }
    }
  }
}

// x == y: the row is normalised in place with the same bits as out of place.
template <class T>
void ExpectInPlaceEqualsOutOfPlace() {
  for (size_t n = 1; n <= 300; ++n) {
    Inputs inputs(simd_test::CaseSeed(n, 9));
    auto row = inputs.Uniform<T>(n, -3, 3);
    const auto gain = inputs.Uniform<T>(n, T(0.5), T(1.5));
    std::vector<T> separate(n);
    const T inverse = RmsNorm(row.data(), gain.data(), T(1e-5), separate.data(), n);
    ASSERT_EQ(RmsNorm(row.data(), gain.data(), T(1e-5), row.data(), n), inverse);
    ASSERT_TRUE(simd_test::SameBits(row.data(), separate.data(), n)) << "n=" << n;
  }
}

constexpr RmsCase kUnitRows{"unit", 1.0, 2, 1e-5};
constexpr RmsCase kWideRowsNoEpsilon{"wide", 1.0, 20, 0.0};
constexpr RmsCase kTinyRowsEpsilonDominates{"tiny", 1e-20, 4, 1e-6};

TEST_P(RmsNormTest, F32Unit) { ExpectRmsNormMatchesTwin<float>(kUnitRows); }
TEST_P(RmsNormTest, F64Unit) { ExpectRmsNormMatchesTwin<double>(kUnitRows); }
TEST_P(RmsNormTest, F32WideNoEpsilon) { ExpectRmsNormMatchesTwin<float>(kWideRowsNoEpsilon); }
TEST_P(RmsNormTest, F64WideNoEpsilon) { ExpectRmsNormMatchesTwin<double>(kWideRowsNoEpsilon); }
TEST_P(RmsNormTest, F32TinyRows) { ExpectRmsNormMatchesTwin<float>(kTinyRowsEpsilonDominates); }
TEST_P(RmsNormTest, F64TinyRows) { ExpectRmsNormMatchesTwin<double>(kTinyRowsEpsilonDominates); }
// Largest magnitudes whose Σx² still fits: 1e16 (f32: 32003·1e32·4 < FLT_MAX) and 1e150.
TEST_P(RmsNormTest, F32Large) { ExpectRmsNormMatchesTwin<float>({"large", 1e16, 1, 0.0}); }
TEST_P(RmsNormTest, F64Large) { ExpectRmsNormMatchesTwin<double>({"large", 1e150, 8, 0.0}); }
TEST_P(RmsNormTest, F32InPlace) { ExpectInPlaceEqualsOutOfPlace<float>(); }
TEST_P(RmsNormTest, F64InPlace) { ExpectInPlaceEqualsOutOfPlace<double>(); }

// Σx² overflows: both kernels return inv = 0 and zero outputs.
TEST_P(RmsNormTest, F32OverflowingRowGivesZero) {
  const std::vector<float> x(64, 1e30f), gain(64, 1.0f);
  std::vector<float> fast(64), twin(64);
  EXPECT_EQ(RmsNorm(x.data(), gain.data(), 1e-5f, fast.data(), 64),
            RmsNormScalar(x.data(), gain.data(), 1e-5f, twin.data(), 64));
  EXPECT_EQ(fast, twin);
}

}  // namespace
}  // namespace kvrt::simd
