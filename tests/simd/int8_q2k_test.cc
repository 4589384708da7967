// The int8-activation path for q2_k (int8_activations.h) on every compiled target: its
// 2-bit quants move into the quad layout (four quads to a byte) losslessly, MatMulInt8
// equals its scalar twin BIT FOR BIT for every row count, column remainder and panel
// range, and the twin equals the header's formula evaluated from ggml's own 84-byte
// block_q2_K of each column (decoded here in dequantize_row_q2_K's order, independently
// of the panel layout), also with every quant 3, every scale and minimum 15 and
// activations of ±127, where the integers are largest.
#include <cstdint>
#include <cstring>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "hwy/tests/hwy_gtest.h"
#include "int8_test_support.h"
#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/simd/int8_activations.h"
#include "simd_test_support.h"
#include "tested_targets.h"

namespace kvrt::simd {
namespace {

using int8_test::Activations;
using simd_test::Inputs;

class Int8Q2KTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(Int8Q2KTest);

constexpr CompressedFormat kType = CompressedFormat::kQ2_K;
constexpr size_t kGgmlBytes = 84;  // {u8 scales[16]; u8 qs[64]; f16 d, dmin} per 256

// One column's block of 32 values decoded: x = d·sc_h·q − dmin·m_h for half h.
struct BlockParts {
  float d = 0, dmin = 0;
  int sc[2] = {}, m[2] = {};
  int q[32] = {};
};

float F16At(const uint8_t* p) { return F16ToF32(static_cast<uint16_t>(p[0] | p[1] << 8)); }

// A ggml block of 256 values as its blocks of 32, in dequantize_row_q2_K's order: value
// i's quant is bits 2·(i % 128 / 32) of qs[i / 128 · 32 + i % 32], its scale byte
// scales[i / 16] (sc in the low nibble, m in the high one).
std::vector<BlockParts> Decode(const uint8_t* block) {
  std::vector<BlockParts> blocks(8);
  for (size_t ib = 0; ib < 8; ++ib) {
    BlockParts& parts = blocks[ib];
    parts.d = F16At(block + 80);
    parts.dmin = F16At(block + 82);
    for (size_t h = 0; h < 2; ++h) {
      parts.sc[h] = block[2 * ib + h] & 0xF;
      parts.m[h] = block[2 * ib + h] >> 4;
    }
    for (size_t l = 0; l < 32; ++l) {
      const size_t i = ib * 32 + l;
      parts.q[l] = block[16 + i / 128 * 32 + i % 32] >> (2 * (i % 128 / 32)) & 3;
    }
  }
  return blocks;
}

// A [K, N] matrix from ggml rows (one per column), in the row layout and in the quad
// layout, with every column's decoded blocks of 32.
struct Q2Case : int8_test::DecodedGgmlQuads<BlockParts, 32> {
  Q2Case(size_t rows, size_t cols, std::vector<uint8_t> ggml_rows)
      : DecodedGgmlQuads(kType, rows, cols, std::move(ggml_rows)) {
    for (size_t s = 0; s < cols * rows / 256; ++s) {
      for (const BlockParts& b : Decode(ggml.data() + s * kGgmlBytes)) parts.push_back(b);
    }
  }
  // From random values, quantized by ggml's reference quantizer column by column.
  static Q2Case Random(size_t rows, size_t cols, Inputs& inputs) {
    return Q2Case(rows, cols, int8_test::RandomGgmlRows(rows, cols, 256, kGgmlBytes, QuantizeBlockQ2_K, inputs));
  }
};

// The header's formula from the decoded ggml parts: per block
// acc + ((d·d_a)·float(sc_0·S_0 + sc_1·S_1) − (dmin·d_a)·float(m_0·Σa_0 + m_1·Σa_1)),
// every integer and product exact in long double, each product rounded to f32 once,
// then the difference and the sum.
float Formula(const Q2Case& w, const Activations& act, size_t row, size_t n) {
  const int8_t* a = act.quants.data() + row * act.rows.k;
  float acc = 0.0f;
  for (size_t b = 0; b < act.rows.blocks(); ++b) {
    const BlockParts& parts = w.Parts(b * 32, n);
    const long double da = act.scales[row * act.rows.blocks() + b];
    long double total = 0, min_total = 0;
    for (size_t h = 0; h < 2; ++h) {
      long double sum = 0, activation_sum = 0;
      for (size_t i = 16 * h; i < 16 * h + 16; ++i) {
        sum += parts.q[i] * a[b * 32 + i];
        activation_sum += a[b * 32 + i];
      }
      total += parts.sc[h] * sum;
      min_total += parts.m[h] * activation_sum;
    }
    const auto scaled = static_cast<float>(parts.d * da * total);
    const auto mins = static_cast<float>(parts.dmin * da * min_total);
    acc = acc + (scaled - mins);
  }
  return acc;
}

TEST(Int8Q2KPackTest, QuadRelayoutIsLossless) {
  ASSERT_TRUE(int8_test::RelayoutIsLosslessForEveryColumnCount(kType, 512, [](size_t rows, size_t cols, Inputs& inputs) {
    return Q2Case::Random(rows, cols, inputs);
  }));
}

// Arbitrary quant bytes (finite scales) keep every quant: at() is the row layout's,
// and the decoded ggml quants are those at() implies.
TEST(Int8Q2KPackTest, ArbitraryQuantsSurviveTheRelayout) {
  const size_t rows = 256, cols = 40;
  Inputs inputs(simd_test::CaseSeed(rows, cols, 91));
  const auto noise = inputs.Uniform<float>(cols * kGgmlBytes, 0, 256);
  std::vector<uint8_t> ggml(cols * kGgmlBytes);
  for (size_t i = 0; i < ggml.size(); ++i) ggml[i] = static_cast<uint8_t>(noise[i]);
  for (size_t n = 0; n < cols; ++n) {
    ggml[n * kGgmlBytes + 80] = 0x00, ggml[n * kGgmlBytes + 81] = 0x3C;  // d 1.0
    ggml[n * kGgmlBytes + 82] = 0x00, ggml[n * kGgmlBytes + 83] = 0x38;  // dmin 0.5
  }
  const Q2Case w(rows, cols, ggml);
  for (size_t k = 0; k < rows; ++k) {
    for (size_t n = 0; n < cols; ++n) {
      const BlockParts& parts = w.Parts(k, n);
      const size_t h = k % 32 / 16;
      const float expected = static_cast<float>(parts.sc[h]) * static_cast<float>(parts.q[k % 32]) -
                             0.5f * static_cast<float>(parts.m[h]);
      ASSERT_EQ(w.quads.at(k, n), expected) << "k=" << k << " n=" << n;
      ASSERT_EQ(w.quads.at(k, n), w.row_view.at(k, n)) << "k=" << k << " n=" << n;
    }
  }
}

TEST_P(Int8Q2KTest, MatMulEqualsTwinAndFormulaForEveryShape) {
  ASSERT_TRUE(int8_test::EveryShapeMatchesTwinAndFormula(static_cast<size_t>(kType), {256, 512}, Q2Case::Random,
                                                         Formula));
}

// Every quant 3 (even columns) or 0 (odd), every scale and minimum 15 (columns n with
// n % 4 < 2) or scale 15 and minimum 0, against activation quants of +127 and of ±127
// in pairs: the largest byte products AVX2's pairs add and the largest integers of the
// header (|sc_0·S_0 + sc_1·S_1| = 2·15·16·3·127, m_0·Σa_0 + m_1·Σa_1 = 2·15·16·127).
// Fast == twin == formula.
TEST_P(Int8Q2KTest, ExtremeValuesSumExactly) {
  const size_t rows = 512, cols = 64;
  std::vector<uint8_t> ggml(cols * rows / 256 * kGgmlBytes);
  for (size_t s = 0; s < cols * rows / 256; ++s) {
    uint8_t* block = ggml.data() + s * kGgmlBytes;
    const size_t n = s / (rows / 256);
    std::memset(block, n % 4 < 2 ? 0xFF : 0x0F, 16);
    std::memset(block + 16, n % 2 == 0 ? 0xFF : 0x00, 64);
    block[80] = 0x00, block[81] = 0x3C;  // d 1.0
    block[82] = 0x00, block[83] = 0x3C;  // dmin 1.0
  }
  const Q2Case w(rows, cols, ggml);
  Inputs inputs(simd_test::CaseSeed(rows, cols, 79));
  Activations act(1, rows, inputs);
  ASSERT_TRUE(int8_test::SetExtremeActivations(&act));
  std::vector<float> y;
  ASSERT_TRUE(int8_test::OneRowMatchesTwinAndFormula(
      act, w.quads, [&](size_t n) { return Formula(w, act, 0, n); }, &y));
  // Column 0: 8 blocks of (2·15·16·3·127 − 2·15·16·127)·d_a, then 8 whose ±127 pairs
  // cancel; column 1 (quants 0) only the minimums.
  ASSERT_FLOAT_EQ(y[0], 8.0f * (182880 - 60960) * act.scales[0]);
  ASSERT_FLOAT_EQ(y[1], -8.0f * 60960 * act.scales[0]);
}

TEST_P(Int8Q2KTest, PanelRangesWriteOnlyTheirColumns) {
  const size_t rows = 256, cols = 300;  // 10 panels, the last one partial
  Inputs inputs(simd_test::CaseSeed(rows, cols, 50 + static_cast<size_t>(kType)));
  const Q2Case w = Q2Case::Random(rows, cols, inputs);
  Activations act(2, rows, inputs);
  ASSERT_TRUE(int8_test::PanelRangesWriteOnlyTheirColumns(act, w.quads));
}

}  // namespace
}  // namespace kvrt::simd
