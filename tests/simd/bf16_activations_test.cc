// The bf16-activation path (bf16_activations.h) on every compiled target: the pair
// relayout keeps every normal value, activation rows are F32ToBf16's roundings,
// MatMulBf16Vectors equals its scalar twin BIT FOR BIT (VDPBF16PS's definition: exact products
// added odd then even, one rounding each; sums never reach 2^-126 here) for every row
// count, column remainder and panel range, a row's result does not depend on the rows
// beside it, and the whole path stays within the derived bound of rounding the
// activations to bf16 from the exact product.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "hwy/tests/hwy_gtest.h"
#include "kvrt/simd/bf16_activations.h"
#include "kvrt/simd/compressed_matrix.h"
#include "bf16_test_support.h"
#include "simd_test_support.h"
#include "tested_targets.h"

namespace kvrt::simd {
namespace {

using simd_test::Inputs;
using simd_test::Bf16Activations;
using simd_test::Bf16PairCase;
using simd_test::ExpectBitsEqual;

class Bf16ActivationsTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(Bf16ActivationsTest);

TEST(Bf16ActivationsRoundTest, RowsAreF32ToBf16WithSubnormalsFlushed) {
  const float x[] = {1.0f, 1.00390625f, 1.005859375f, -3.0e-39f, 2.0e-39f, 1.0e-30f, -0.0f, 65504.0f};
  std::vector<uint32_t> pairs(4);
  RoundRowToBf16Scalar(x, {pairs.data(), 8}, 0);
  for (size_t k = 0; k < 8; ++k) {
    const uint16_t got = static_cast<uint16_t>(pairs[k / 2] >> (16 * (k % 2)));
    const uint16_t rounded = F32ToBf16(x[k]);
    const bool subnormal = (rounded & 0x7F80) == 0;
    EXPECT_EQ(got, subnormal ? rounded & 0x8000 : rounded) << "k=" << k;
  }
  EXPECT_EQ(pairs[1] >> 16, 0x8000u);  // -3e-39 (subnormal): -0
  EXPECT_EQ(pairs[2] & 0xFFFF, 0u);    // 2e-39: +0
  EXPECT_EQ(pairs[0] & 0xFFFF, 0x3F80u);
  EXPECT_EQ(pairs[0] >> 16, 0x3F80u);  // 1 + 2^-8 ties to even: 1
  EXPECT_EQ(pairs[1] & 0xFFFF, 0x3F81u);  // 1 + 3·2^-9 rounds up
}

TEST_P(Bf16ActivationsTest, RoundRowEqualsItsTwin) {
  Inputs inputs(17);
  const float specials[] = {0.0f, -0.0f, 1.0f, 1.00390625f, 1.005859375f, -3.0e-39f, 2.0e-39f, 1.1754942e-38f,
                            3.3895314e38f, 3.4028235e38f, -INFINITY, INFINITY, NAN, -NAN, 0x1.fffffep-127f, 65504.0f};
  for (size_t k = 2; k <= 80; k += 2) {
    std::vector<float> x = inputs.Uniform<float>(k, -3, 3);
    for (size_t i = 0; i < k; i += 3) x[i] = specials[(i / 3 + k) % 16];
    std::vector<uint32_t> fast(k / 2, 0xDEADBEEF), twin(k / 2, 0xDEADBEEF);
    RoundRowToBf16(x.data(), {fast.data(), k}, 0);
    RoundRowToBf16Scalar(x.data(), {twin.data(), k}, 0);
    ASSERT_EQ(fast, twin) << "k=" << k;
  }
}

TEST(Bf16ActivationsPackTest, PairsKeepEveryNormalValueAndFlushSubnormals) {
  Inputs inputs(3);
  for (size_t rows : {2, 6, 64}) {
    for (size_t cols : {1, 31, 33, 100}) {
      Bf16PairCase w(rows, cols, inputs);
      ASSERT_TRUE(HasBf16Pairs(w.row_view));
      EXPECT_FALSE(HasBf16Pairs(w.pairs));
      for (size_t k = 0; k < rows; ++k) {
        for (size_t n = 0; n < w.pairs.panels() * kCompressedPanelWidth; ++n) {
          ASSERT_EQ(w.pairs.at(k, n), w.row_view.at(k, n)) << rows << "x" << cols << " k=" << k << " n=" << n;
        }
      }
      std::vector<float> column(rows);
      GatherColumn(w.pairs, cols - 1, column.data());
      for (size_t k = 0; k < rows; ++k) EXPECT_EQ(column[k], w.row_view.at(k, cols - 1));
    }
  }
  const Bf16PairCase tiny({1e-39f, -1e-39f, 1.0f, -2.0f}, 2, 2);
  const CompressedMatrixView& pairs = tiny.pairs;
  EXPECT_EQ(pairs.at(0, 0), 0.0f);
  EXPECT_FALSE(std::signbit(pairs.at(0, 0)));
  EXPECT_EQ(pairs.at(0, 1), 0.0f);
  EXPECT_TRUE(std::signbit(pairs.at(0, 1)));
  EXPECT_EQ(pairs.at(1, 0), 1.0f);
  EXPECT_EQ(pairs.at(1, 1), -2.0f);
  EXPECT_FALSE(HasBf16Pairs({CompressedFormat::kBf16, tiny.row_storage.get(), 3, 2}));
  EXPECT_FALSE(HasBf16Pairs({CompressedFormat::kF16, tiny.row_storage.get(), 2, 2}));
}

TEST_P(Bf16ActivationsTest, MatMulEqualsTwinForEveryShape) {
  Inputs inputs(5);
  for (size_t k : {2, 34, 64, 512}) {
    for (size_t cols : {1, 31, 33, 64, 100, 161}) {
      Bf16PairCase w(k, cols, inputs);
      for (size_t m : {1, 2, 5, 6, 7, 13}) {
        Bf16Activations act(m, k, inputs);
        const size_t panels = w.pairs.panels();
        // Every panel, then an inner range that leaves the first and last panel out.
        for (const auto& [begin, end] : {std::pair<size_t, size_t>{0, panels}, {1, panels > 2 ? panels - 1 : 1}}) {
          if (begin >= end) continue;
          const size_t ldc = cols + 3;
          std::vector<float> fast(m * ldc, -7.0f), twin(m * ldc, -7.0f);
          MatMulBf16Vectors(act.rows, 0, m, w.pairs, fast.data(), ldc, begin, end);
          MatMulBf16Scalar(act.rows, 0, m, w.pairs, twin.data(), ldc, begin, end);
          SCOPED_TRACE(testing::Message() << "k=" << k << " cols=" << cols << " m=" << m << " panels " << begin
                                          << ".." << end);
          ExpectBitsEqual(fast, twin, "fast vs twin");
        }
      }
    }
  }
}

TEST_P(Bf16ActivationsTest, ARowsResultDoesNotDependOnTheRowsBesideIt) {
  Inputs inputs(9);
  const size_t k = 96, cols = 70, m = 13;
  Bf16PairCase w(k, cols, inputs);
  Bf16Activations act(m, k, inputs);
  simd_test::ExpectRowsIndependentOfTheirNeighbours(w, m, {1, 3}, [&](size_t first_row, size_t rows, float* c) {
    MatMulBf16Vectors(act.rows, first_row, rows, w.pairs, c, cols, 0, w.pairs.panels());
  });
}

// The bound of rounding the activations to bf16 from the exact product
// (bf16_test_support.h), on a 4×768×96 product.
TEST_P(Bf16ActivationsTest, StaysWithinTheActivationRoundingBound) {
  Inputs inputs(13);
  const size_t k = 768, cols = 96, m = 4;
  Bf16PairCase w(k, cols, inputs);
  Bf16Activations act(m, k, inputs);
  std::vector<float> y(m * cols);
  MatMulBf16Vectors(act.rows, 0, m, w.pairs, y.data(), cols, 0, w.pairs.panels());
  // The rounding of the activations shows beyond f32's own error (the bound is not vacuous).
  EXPECT_GT(simd_test::ExpectWithinActivationRoundingBound(act, w, y, m), 0u);
}

// One column, K = 4, every activation 1, weights (2^-24, 1, -1, 2^-24): the two orders
// of a pair's products give different sums, and the kernel and the twin take the odd one
// first, as VDPBF16PS does:
//   odd then even: 0 + 1 = 1, 1 + 2^-24 = 1 (a tie, to even), 1 + 2^-24 = 1, 1 − 1 = 0;
//   even then odd: 0 + 2^-24, + 1 = 1 (a tie), 1 − 1 = 0, 0 + 2^-24 = 2^-24.
TEST_P(Bf16ActivationsTest, AddsEachPairsOddProductFirst) {
  const size_t k = 4;
  const Bf16PairCase w({0x1p-24f, 1.0f, -1.0f, 0x1p-24f}, k, 1);  // one column
  const CompressedMatrixView& pairs = w.pairs;
  const float x[] = {1.0f, 1.0f, 1.0f, 1.0f};
  uint32_t rounded[2];
  RoundRowToBf16(x, {rounded, k}, 0);
  float twin = -1.0f, fast = -1.0f;
  MatMulBf16Scalar({rounded, k}, 0, 1, pairs, &twin, 1, 0, 1);
  MatMulBf16Vectors({rounded, k}, 0, 1, pairs, &fast, 1, 0, 1);
  EXPECT_EQ(twin, 0.0f);
  EXPECT_EQ(fast, 0.0f);
}

}  // namespace
}  // namespace kvrt::simd
