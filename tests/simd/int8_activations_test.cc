// The int8-activation path (int8_activations.h) on every compiled target: the quad
// relayout is lossless, activation rows are ggml's q8_0 blocks, and MatMulInt8 equals
// its scalar twin BIT FOR BIT (the header's arithmetic is exact integers plus two
// rounded f32 operations per block, the same on every target) for every row count,
// column remainder and panel range. The twin is itself checked against an exact
// long-double evaluation of the same formula, and the whole path against the f32
// product within the derived bound of rounding the activations to 8 bits.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <utility>
#include <limits>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "hwy/tests/hwy_gtest.h"
#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/simd/int8_activations.h"
#include "int8_test_support.h"
#include "simd_test_support.h"
#include "tested_targets.h"

namespace kvrt::simd {
namespace {

using simd_test::Inputs;

class Int8ActivationsTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(Int8ActivationsTest);

constexpr CompressedFormat kTypes[] = {CompressedFormat::kQ8_0, CompressedFormat::kQ4_0, CompressedFormat::kQ5_0};
using int8_test::Activations;

// A random q8_0/q4_0/q5_0 matrix in the row layout and its quad relayout.
struct QuadCase {
  QuadCase(CompressedFormat type, size_t rows, size_t cols, Inputs& inputs)
      : bytes(CompressedMatrixBytes(type, rows, cols)),
        row_storage(hwy::AllocateAligned<uint8_t>(bytes)),
        quad_storage(hwy::AllocateAligned<uint8_t>(bytes)) {
    auto dense = inputs.Uniform<float>(rows * cols, -1, 1);
    for (size_t i = 0; i < dense.size(); i += 89) dense[i] *= 30.0f;
    PackCompressed(type, dense.data(), rows, cols, false, row_storage.get());
    row_view = {type, row_storage.get(), rows, cols};
    quads = PackInt8Quads(row_view, quad_storage.get());
  }
  size_t bytes;
  hwy::AlignedFreeUniquePtr<uint8_t[]> row_storage, quad_storage;
  CompressedMatrixView row_view, quads;
};

std::vector<size_t> ColumnCounts() { return {1, 17, 32, 33, 64, 100, 160, 161}; }

TEST(Int8ActivationsQuantizeTest, RowsAreGgmlQ8Blocks) {
  Inputs inputs(11);
  Activations act(3, 96, inputs);
  std::vector<int8_t> quants(96);
  std::vector<float> scales(3);
  std::vector<int32_t> sums(3), half_sums(6);
  for (size_t r = 0; r < 3; ++r) {
    QuantizeRowScalar(act.x.data() + r * 96, {quants.data(), scales.data(), sums.data(), half_sums.data(), 96},
                      0);
    EXPECT_EQ(quants, std::vector<int8_t>(act.quants.begin() + r * 96, act.quants.begin() + r * 96 + 96));
    for (size_t b = 0; b < 3; ++b) {
      uint8_t block[34];
      QuantizeBlockQ8_0(act.x.data() + r * 96 + b * 32, block);
      EXPECT_EQ(act.scales[r * 3 + b], F16ToF32(static_cast<uint16_t>(block[0] | block[1] << 8)));
      int32_t half[2] = {0, 0};
      for (size_t i = 0; i < 32; ++i) {
        EXPECT_EQ(act.quants[r * 96 + b * 32 + i], static_cast<int8_t>(block[2 + i]));
        half[i / 16] += static_cast<int8_t>(block[2 + i]);
      }
      EXPECT_EQ(act.sums[r * 3 + b], half[0] + half[1]);
      EXPECT_EQ(act.half_sums[(r * 3 + b) * 2], half[0]);
      EXPECT_EQ(act.half_sums[(r * 3 + b) * 2 + 1], half[1]);
      EXPECT_EQ(half_sums[b * 2 + 1], half[1]);
    }
  }
  EXPECT_EQ(act.scales[1], 0.0f);  // the zero block of row 0
}

TEST_P(Int8ActivationsTest, QuantizeRowEqualsItsTwin) {
  Inputs inputs(12);
  const size_t k = 21 * 32;  // more blocks than one chunk of the fast kernel (16)
  std::vector<float> x = inputs.Uniform<float>(k, -3, 3);
  std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // d = 0
  // Exact ties x·id = n + 1/2 (amax 127 gives id = 1): roundf rounds them away from 0.
  x[64] = 127.0f;
  for (size_t i = 65; i < 96; ++i) x[i] = static_cast<float>(static_cast<int>(i) - 80) + 0.5f;
  x[96] = -1e-30f;  // a tiny block
  for (size_t i = 97; i < 128; ++i) x[i] = 1e-31f * static_cast<float>(i % 7);
  // Scales the f16 round trip rounds: exact ties between two f16 values (1 + 2^-11 to
  // even 1, 1 + 3·2^-11 to even 1 + 2^-9), past the f16 range (→ inf), and in the last
  // chunk's block, a tie again.
  x[128] = 127.0f * (1.0f + 1.0f / 2048.0f);
  x[160] = -127.0f * (1.0f + 3.0f / 2048.0f);
  x[192] = 1e10f;
  x[k - 1] = 127.0f * (1.0f + 3.0f / 2048.0f);
  const size_t blocks = k / 32;
  std::vector<int8_t> quants(k), twin_quants(k);
  std::vector<float> scales(blocks), twin_scales(blocks);
  std::vector<int32_t> sums(blocks), twin_sums(blocks), half_sums(2 * blocks), twin_half_sums(2 * blocks);
  QuantizeRow(x.data(), {quants.data(), scales.data(), sums.data(), half_sums.data(), k}, 0);
  QuantizeRowScalar(x.data(), {twin_quants.data(), twin_scales.data(), twin_sums.data(), twin_half_sums.data(), k},
                    0);
  EXPECT_EQ(quants, twin_quants);
  EXPECT_EQ(sums, twin_sums);
  EXPECT_EQ(half_sums, twin_half_sums);
  ASSERT_TRUE(simd_test::SameBits(scales.data(), twin_scales.data(), blocks));
  EXPECT_EQ(quants[65], -15);  // −15.5 away from zero
  EXPECT_EQ(quants[66], -14);  // −14.5
  EXPECT_EQ(scales[4], 1.0f);
  EXPECT_EQ(scales[5], 1.0f + 1.0f / 512.0f);
  EXPECT_EQ(scales[6], std::numeric_limits<float>::infinity());
  EXPECT_EQ(scales[blocks - 1], 1.0f + 1.0f / 512.0f);
}

TEST(Int8ActivationsPackTest, QuadRelayoutIsLossless) {
  for (CompressedFormat type : kTypes) {
    for (size_t rows : {32, 96}) {
      for (size_t cols : ColumnCounts()) {
        Inputs inputs(simd_test::CaseSeed(rows, cols, static_cast<size_t>(type)));
        QuadCase w(type, rows, cols, inputs);
        EXPECT_EQ(w.quads.layout, CompressedLayout::kInt8Quads);
        for (size_t k = 0; k < rows; ++k) {
          for (size_t n = 0; n < w.quads.panels() * 32; ++n) {
            ASSERT_EQ(w.quads.at(k, n), w.row_view.at(k, n))
                << CompressedFormatName(type) << " K=" << rows << " N=" << cols << " k=" << k << " n=" << n;
          }
        }
        std::vector<float> column(rows), expected(rows);
        for (size_t n = 0; n < cols; n += 7) {
          GatherColumn(w.quads, n, column.data());
          GatherColumn(w.row_view, n, expected.data());
          ASSERT_EQ(column, expected);
        }
      }
    }
  }
}

// The header's formula with every product and sum exact (long double holds the int32
// sums and the products of f16 values exactly), rounding as the header says.
float Formula(const Activations& act, size_t row, const CompressedMatrixView& w, size_t n) {
  float acc = 0.0f;
  for (size_t b = 0; b < act.rows.blocks(); ++b) {
    long double dot = 0;
    for (size_t k = b * 32; k < b * 32 + 32; ++k) {
      // at() = q·d_w exactly, so dot = d_w·S_b exactly.
      dot += static_cast<long double>(w.at(k, n)) * act.quants[row * act.rows.k + k];
    }
    // dot = d_w·S_b exactly; the kernel computes (d_w·d_a)·float(S_b), one rounding,
    // which is the rounding of dot·d_a (exact in long double).
    const float product = static_cast<float>(dot * act.scales[row * act.rows.blocks() + b]);
    acc = acc + product;
  }
  return acc;
}

TEST_P(Int8ActivationsTest, MatMulEqualsTwinForEveryShape) {
  for (CompressedFormat type : kTypes) {
    for (size_t rows : {32, 64, 160}) {
      for (size_t cols : ColumnCounts()) {
        for (size_t m : {1, 2, 3, 4, 5, 7, 9}) {
          Inputs inputs(simd_test::CaseSeed(rows * 7 + m, cols, static_cast<size_t>(type)));
          QuadCase w(type, rows, cols, inputs);
          Activations act(m + 2, rows, inputs);
          const size_t ldc = cols + 3, first_row = 1;
          std::vector<float> twin;
          ASSERT_TRUE(int8_test::MatMulMatchesTwin(act, first_row, m, w.quads, &twin))
              << CompressedFormatName(type) << " K=" << rows << " N=" << cols << " M=" << m;
          if (m == 3) {
            const auto formula = [&](size_t n) { return Formula(act, first_row + 2, w.quads, n); };
            ASSERT_TRUE(int8_test::RowEqualsFormula(&twin[2 * ldc], cols, formula))
                << CompressedFormatName(type) << " K=" << rows << " N=" << cols;
          }
        }
      }
    }
  }
}

// The quants at the ends of their ranges, where a form that adds byte products in
// int16 (AVX2's VPMADDUBSW pairs) would saturate if it let them: q8_0 weights of
// −128, −127 and 127 (a GGUF file may hold −128, which the quantizer never makes) and
// q4_0 quants of −8 and 7, against activation quants of ±127 in every sign pattern.
// Every block's integer sum must still be exact: the kernel equals its twin and the
// exact formula.
TEST_P(Int8ActivationsTest, ExtremeQuantsSumExactly) {
  const size_t rows = 64, cols = 64;
  // Activations: block 0 all +127 (x = 1), block 1 alternating ±127 in pairs.
  std::vector<float> x(rows);
  for (size_t k = 0; k < rows; ++k) x[k] = k < 32 || (k / 2) % 2 == 0 ? 1.0f : -1.0f;
  for (CompressedFormat type : kTypes) {
    // ggml rows (one per column n) of two blocks: scale 1.0 (f16 0x3C00), then quants.
    const size_t block_bytes = type == CompressedFormat::kQ8_0 ? 34 : type == CompressedFormat::kQ4_0 ? 18 : 22;
    const size_t quants_at = type == CompressedFormat::kQ5_0 ? 6 : 2;  // q5_0: qh[4] first
    std::vector<uint8_t> ggml(cols * 2 * block_bytes);
    for (size_t n = 0; n < cols; ++n) {
      for (size_t b = 0; b < 2; ++b) {
        uint8_t* block = ggml.data() + (n * 2 + b) * block_bytes;
        block[0] = 0x00;
        block[1] = 0x3C;
        for (size_t j = 0; j < 32; ++j) {
          const size_t pattern = (n + j + b) % 4;  // extremes mixed within a lane's four
          if (type == CompressedFormat::kQ8_0) {
            const int8_t q[4] = {-128, -127, 127, -128};
            block[2 + j] = static_cast<uint8_t>(n % 3 == 0 ? q[0] : q[pattern]);
          } else if (j < 16) {
            // Column n % 3 == 0 all 7 (u = 15: the largest int16 pair sums); q5_0's
            // high bits all set, u = 31 there.
            const uint8_t low = n % 3 == 0 || pattern % 2 == 0 ? 0x0F : 0x00;
            block[quants_at + j] = low | static_cast<uint8_t>(n % 3 != 2 ? 0xF0 : 0x00);
          }
          if (type == CompressedFormat::kQ5_0 && j < 4) block[2 + j] = 0xFF;
        }
      }
    }
    const size_t bytes = CompressedMatrixBytes(type, rows, cols);
    auto row_storage = hwy::AllocateAligned<uint8_t>(bytes);
    auto quad_storage = hwy::AllocateAligned<uint8_t>(bytes);
    RepackGgml(type, ggml.data(), rows, cols, row_storage.get());
    const CompressedMatrixView quads = PackInt8Quads({type, row_storage.get(), rows, cols}, quad_storage.get());
    Inputs inputs(simd_test::CaseSeed(rows, cols, 70));
    Activations act(1, rows, inputs);
    act.x = x;
    QuantizeRow(act.x.data(), act.rows, 0);
    ASSERT_EQ(act.quants[0], 127);
    ASSERT_EQ(act.quants[34], -127);
    std::vector<float> y(cols), twin(cols);
    MatMulInt8(act.rows, 0, 1, quads, y.data(), cols, 0, quads.panels());
    MatMulInt8Scalar(act.rows, 0, 1, quads, twin.data(), cols, 0, quads.panels());
    ASSERT_TRUE(simd_test::SameBits(y.data(), twin.data(), cols)) << CompressedFormatName(type);
    ASSERT_TRUE(int8_test::RowEqualsFormula(twin.data(), cols, [&](size_t n) { return Formula(act, 0, quads, n); }))
        << CompressedFormatName(type);
    // Column 0 against block 0's +127 activations (block 1's cancel): q8_0 all −128,
    // −128·127·32·d_a ≈ −4096; q4_0 all 7, 7·127·32·d_a ≈ 224; q5_0 all 15, ≈ 480
    // (d_a ≈ 1/127).
    const float column0 = type == CompressedFormat::kQ8_0 ? -4096.0f : type == CompressedFormat::kQ4_0 ? 224.0f : 480.0f;
    ASSERT_NEAR(y[0], column0, 0.5f) << CompressedFormatName(type);
  }
}

TEST_P(Int8ActivationsTest, PanelRangesWriteOnlyTheirColumns) {
  for (CompressedFormat type : kTypes) {
    const size_t rows = 64, cols = 300;  // 10 panels, the last one partial
    Inputs inputs(simd_test::CaseSeed(rows, cols, 40 + static_cast<size_t>(type)));
    QuadCase w(type, rows, cols, inputs);
    Activations act(2, rows, inputs);
    ASSERT_TRUE(int8_test::PanelRangesWriteOnlyTheirColumns(act, w.quads)) << CompressedFormatName(type);
  }
}

// Against the exact product x·W on the dequantized weights: rounding an activation to
// its block's step d_a errs by ≤ d_a/2, so |y − x·W| ≤ Σ_b (d_a,b/2)·Σ_{k∈b}|W[k][n]|
// plus the f32 roundings (≤ (blocks + 1)·u per |term|, far smaller; 2·ε·Σ|x·W| covers it).
TEST(Int8ActivationsAccuracyTest, WithinTheActivationRoundingBound) {
  for (CompressedFormat type : {CompressedFormat::kQ8_0, CompressedFormat::kQ4_0, CompressedFormat::kQ5_0,
                                CompressedFormat::kQ4_K, CompressedFormat::kQ5_K, CompressedFormat::kQ6_K}) {
    const size_t rows = 256, cols = 96;
    Inputs inputs(simd_test::CaseSeed(rows, cols, 90 + static_cast<size_t>(type)));
    QuadCase w(type, rows, cols, inputs);
    Activations act(1, rows, inputs);
    std::vector<float> y(cols);
    MatMulInt8(act.rows, 0, 1, w.quads, y.data(), cols, 0, w.quads.panels());
    for (size_t n = 0; n < cols; ++n) {
      long double exact = 0, bound = 0, magnitude = 0;
      for (size_t k = 0; k < rows; ++k) {
        const long double weight = w.quads.at(k, n);
        exact += weight * act.x[k];
        magnitude += std::fabs(weight * act.x[k]);
        bound += std::fabs(weight) * act.scales[k / 32] / 2;
      }
      bound += 2 * static_cast<long double>(FLT_EPSILON) * (magnitude + bound);
      ASSERT_LE(std::fabs(y[n] - exact), bound) << CompressedFormatName(type) << " n=" << n;
    }
  }
}

}  // namespace
}  // namespace kvrt::simd
