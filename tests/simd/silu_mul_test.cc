// SiluMul against SiluMulScalar on every compiled target (silu_mul.h).
#include <cmath>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "kvrt/simd/silu_mul.h"
#include "simd_test_support.h"
#include "tested_targets.h"

namespace kvrt::simd {
namespace {

using simd_test::GuardedBuffer;
using simd_test::Inputs;

class SiluMulTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(SiluMulTest);

// Error of one exp: Highway's Exp ≤ 1 ULP (math-inl.h), glibc's exp within 1 ULP.
constexpr long double kExpUlp = 1;

// From silu_mul.h: e = exp(−|g|) differs by (1 + kExpUlp)·ε relative; σ's numerator
// (e or 1) and denominator (1 + e, one rounding each) carry at most that plus ε each;
// the division and the two products round once each in both kernels:
//   |fast − twin| ≤ (2·kExpUlp + 6)·ε·|out|.
// For g < −87 (f32) / −708 (f64) e is subnormal (or flushed to 0 by Highway below
// −104 / −1000, where the twin's exp is below denorm_min/2 too): σ differs by a few
// denorm_min, scaled by |g·up|, and the subnormal output rounds by denorm_min.
template <class T>
long double SiluBound(T gate, T up, T twin) {
  const long double eps = simd_test::Epsilon<T>();
  const long double tiny = simd_test::DenormMin<T>();
  return (2 * kExpUlp + 6) * eps * std::fabs(static_cast<long double>(twin)) +
         4 * tiny * std::fabs(static_cast<long double>(gate) * up) + 2 * tiny;
}

enum class SiluInputs { kUniform, kUnderflow, kLarge, kSubnormal };

template <class T>
std::vector<T> MakeGates(SiluInputs kind, size_t n, Inputs& inputs) {
  const bool is_float = sizeof(T) == 4;
  switch (kind) {
    case SiluInputs::kUniform:
      return inputs.Uniform<T>(n, -12, 12);
    case SiluInputs::kUnderflow:  // across the subnormal range of exp(−|g|)
      return inputs.Uniform<T>(n, is_float ? T(-110) : T(-760), is_float ? T(110) : T(760));
    case SiluInputs::kLarge:
      return inputs.WideExponents<T>(n, is_float ? T(1e30) : T(1e200), 8);
    case SiluInputs::kSubnormal:
      return inputs.WideExponents<T>(n, std::numeric_limits<T>::denorm_min() * 1000, 8);
  }
  return {};
}

template <class T>
void ExpectSiluMulMatchesTwin(SiluInputs kind) {
  for (size_t n : simd_test::SweepSizes()) {
    for (size_t offset : simd_test::kMisalignments) {
      Inputs inputs(simd_test::CaseSeed(n, offset, static_cast<size_t>(kind)));
      const auto gate = MakeGates<T>(kind, n, inputs);
      const auto up = inputs.Uniform<T>(n, -2, 2);
      GuardedBuffer<T> gate_buffer(n, offset), up_buffer(n, 0), out(n, (offset + 2) % 4);
      gate_buffer.CopyFrom(gate);
      up_buffer.CopyFrom(up);
      std::vector<T> twin(n);
      SiluMulScalar(gate.data(), up.data(), twin.data(), n);
      SiluMul(gate_buffer.data(), up_buffer.data(), out.data(), n);
      ASSERT_TRUE(out.GuardsIntact()) << "n=" << n;
      for (size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(simd_test::WithinBound(out[i], twin[i], SiluBound(gate[i], up[i], twin[i])))
            << simd_test::TypeName<T>() << " n=" << n << " i=" << i << " gate=" << gate[i];
      }
    }
  }
}

// out may be gate or up: same bits as a separate output row.
template <class T>
void ExpectAliasingAllowed() {
  for (size_t n = 0; n <= 300; ++n) {
    Inputs inputs(simd_test::CaseSeed(n, 3));
    const auto gate = inputs.Uniform<T>(n, -12, 12);
    const auto up = inputs.Uniform<T>(n, -2, 2);
    std::vector<T> separate(n);
    SiluMul(gate.data(), up.data(), separate.data(), n);
    auto into_gate = gate;
    SiluMul(into_gate.data(), up.data(), into_gate.data(), n);
    auto into_up = up;
    SiluMul(gate.data(), into_up.data(), into_up.data(), n);
    ASSERT_TRUE(simd_test::SameBits(into_gate.data(), separate.data(), n)) << "n=" << n;
    ASSERT_TRUE(simd_test::SameBits(into_up.data(), separate.data(), n)) << "n=" << n;
  }
}

TEST_P(SiluMulTest, F32Uniform) { ExpectSiluMulMatchesTwin<float>(SiluInputs::kUniform); }
TEST_P(SiluMulTest, F64Uniform) { ExpectSiluMulMatchesTwin<double>(SiluInputs::kUniform); }
TEST_P(SiluMulTest, F32Underflow) { ExpectSiluMulMatchesTwin<float>(SiluInputs::kUnderflow); }
TEST_P(SiluMulTest, F64Underflow) { ExpectSiluMulMatchesTwin<double>(SiluInputs::kUnderflow); }
TEST_P(SiluMulTest, F32Large) { ExpectSiluMulMatchesTwin<float>(SiluInputs::kLarge); }
TEST_P(SiluMulTest, F64Large) { ExpectSiluMulMatchesTwin<double>(SiluInputs::kLarge); }
TEST_P(SiluMulTest, F32Subnormal) { ExpectSiluMulMatchesTwin<float>(SiluInputs::kSubnormal); }
TEST_P(SiluMulTest, F64Subnormal) { ExpectSiluMulMatchesTwin<double>(SiluInputs::kSubnormal); }
TEST_P(SiluMulTest, F32Aliasing) { ExpectAliasingAllowed<float>(); }
TEST_P(SiluMulTest, F64Aliasing) { ExpectAliasingAllowed<double>(); }

}  // namespace
}  // namespace kvrt::simd
