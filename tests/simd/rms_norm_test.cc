// RmsNorm against RmsNormScalar on every compiled target (rms_norm.h).
#include <cmath>
#include <limits>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "kvrt/simd/rms_norm.h"
#include "simd_test_support.h"
#include "tested_targets.h"

namespace kvrt::simd {
namespace {

using simd_test::GuardedBuffer;
using simd_test::Inputs;

class RmsNormTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(RmsNormTest);

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

// Σx² overflows although every x is finite (issue 38: huge GGUF weights zeroed
// the fast f32 engine's logits): the kernel scales the row down before squaring
// it and normalises it like any other. Checked against the exact result in long
// double, whose range holds these squares, within the bound of rms_norm.h minus
// the twin's log term: (n/2 + 3)·ε for inv, plus the output's two roundings.
template <class T>
void ExpectOverflowingRowsNormalise(double scale) {
  for (size_t n : simd_test::SweepSizes()) {
    if (n == 0) continue;
    for (size_t offset : simd_test::kMisalignments) {
      Inputs inputs(simd_test::CaseSeed(n, offset + 17));
      auto x = inputs.WideExponents<T>(n, static_cast<T>(scale), 4);
      x[n / 2] = static_cast<T>(scale);  // at least one square overflows on its own
      const auto gain = inputs.Uniform<T>(n, T(0.5), T(1.5));
      GuardedBuffer<T> row(n, offset);
      row.CopyFrom(x);
      std::vector<T> y(n);
      RmsNorm(row.data(), gain.data(), T(1e-5), y.data(), n);
      long double sum = 0;
      for (T v : x) sum += static_cast<long double>(v) * v;
      const long double inverse = 1.0L / std::sqrt(sum / n + 1e-5L);
      const long double relative = (n / 2.0L + 5) * simd_test::Epsilon<T>();
      for (size_t i = 0; i < n; ++i) {
        const long double exact = static_cast<long double>(x[i]) * inverse * gain[i];
        ASSERT_TRUE(simd_test::WithinBound(y[i], static_cast<T>(exact),
                                           relative * std::fabs(exact) + simd_test::DenormMin<T>()))
            << simd_test::TypeName<T>() << " n=" << n << " i=" << i << " y=" << y[i] << " exact=" << exact;
      }
      // In place, with the same bits.
      RmsNorm(row.data(), gain.data(), T(1e-5), row.data(), n);
      ASSERT_TRUE(simd_test::SameBits(row.data(), y.data(), n)) << "n=" << n;
    }
  }
}

TEST_P(RmsNormTest, F32OverflowingRowNormalises) { ExpectOverflowingRowsNormalise<float>(1e30); }
TEST_P(RmsNormTest, F64OverflowingRowNormalises) { ExpectOverflowingRowsNormalise<double>(1e200); }

// The largest finite magnitudes normalise too.
TEST_P(RmsNormTest, F32RowOfMaximaNormalises) {
  const std::vector<float> x(64, std::numeric_limits<float>::max()), gain(64, 1.0f);
  std::vector<float> y(64);
  RmsNorm(x.data(), gain.data(), 1e-5f, y.data(), 64);
  for (float v : y) EXPECT_FLOAT_EQ(v, 1.0f);
}

// An infinite element is not rescued: the row becomes NaN, which the engines
// report as a non-finite activation (a zero row would pass for an answer).
TEST_P(RmsNormTest, F32InfiniteElementGivesNaN) {
  std::vector<float> x(64, 1.0f);
  x[5] = std::numeric_limits<float>::infinity();
  const std::vector<float> gain(64, 1.0f);
  std::vector<float> y(64);
  RmsNorm(x.data(), gain.data(), 1e-5f, y.data(), 64);
  EXPECT_TRUE(std::isnan(y[5]));
}

}  // namespace
}  // namespace kvrt::simd
