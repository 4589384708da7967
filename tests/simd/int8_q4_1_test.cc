// The int8-activation path for q4_1 and q5_1 (int8_activations.h) on every compiled
// target: their quants move into q4_0's / q5_0's quads (behind the 128-byte scale area
// of d and m) losslessly, MatMulInt8 (S = Σ q·a over the unsigned quants, plus the
// minimum's m·Σa) equals its scalar twin BIT FOR BIT for every row count, column
// remainder and panel range, and the twin equals the header's formula evaluated from
// ggml's own blocks of each column (decoded here from ggml's byte layout, independently
// of the panel layout), also with every quant at its largest against activations of
// ±127, where AVX2's int16 pair sums are largest.
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

class Int8Q4_1Test : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(Int8Q4_1Test);

constexpr CompressedFormat kTypes[] = {CompressedFormat::kQ4_1, CompressedFormat::kQ5_1};

// ggml's blocks of 32: q4_1 {f16 d, m; u8 qs[16]}, q5_1 {f16 d, m; u8 qh[4]; u8 qs[16]}.
size_t GgmlBlockBytes(CompressedFormat type) { return type == CompressedFormat::kQ4_1 ? 20 : 24; }

// One column's block of 32 values decoded: x = d·q + m.
struct BlockParts {
  float d = 0, m = 0;
  int q[32] = {};
};

float F16At(const uint8_t* p) { return F16ToF32(static_cast<uint16_t>(p[0] | p[1] << 8)); }

// dequantize_row_q4_1 / _q5_1's order: byte l of qs holds value l (low nibble) and
// l + 16 (high); q5_1's fifth bit of value i is bit i of the little-endian qh.
BlockParts Decode(CompressedFormat type, const uint8_t* block) {
  BlockParts parts;
  parts.d = F16At(block);
  parts.m = F16At(block + 2);
  const bool five = type == CompressedFormat::kQ5_1;
  const uint8_t* qs = block + (five ? 8 : 4);
  uint32_t qh = 0;
  if (five) std::memcpy(&qh, block + 4, sizeof(qh));
  for (int l = 0; l < 16; ++l) {
    parts.q[l] = (qs[l] & 0xF) | (five ? (qh >> l & 1) << 4 : 0);
    parts.q[l + 16] = (qs[l] >> 4) | (five ? (qh >> (l + 16) & 1) << 4 : 0);
  }
  return parts;
}

// A [K, N] matrix from ggml rows (one per column), in the row layout and in the quad
// layout, with every column's decoded blocks.
struct Q4_1Case : int8_test::DecodedGgmlQuads<BlockParts, 32> {
  Q4_1Case(CompressedFormat format, size_t rows, size_t cols, std::vector<uint8_t> ggml_rows)
      : DecodedGgmlQuads(format, rows, cols, std::move(ggml_rows)) {
    for (size_t i = 0; i < cols * rows / 32; ++i)
      parts.push_back(Decode(type, ggml.data() + i * GgmlBlockBytes(type)));
  }
  // From random values, quantized by ggml's reference quantizer column by column.
  static Q4_1Case Random(CompressedFormat type, size_t rows, size_t cols, Inputs& inputs) {
    const auto quantize = [type](const float* x, uint8_t* out) {
      if (type == CompressedFormat::kQ4_1) QuantizeBlockQ4_1(x, out);
      if (type == CompressedFormat::kQ5_1) QuantizeBlockQ5_1(x, out);
    };
    return Q4_1Case(type, rows, cols,
                    int8_test::RandomGgmlRows(rows, cols, 32, GgmlBlockBytes(type), quantize, inputs));
  }
};

// The header's formula from the decoded ggml parts: per block
// acc + ((d·d_a)·float(S) + (m·d_a)·float(Σa)), S = Σ q·a, every integer and product
// exact in long double, rounded to f32 once per product and once per sum, as the
// header puts them.
float Formula(const Q4_1Case& w, const Activations& act, size_t row, size_t n) {
  const int8_t* a = act.quants.data() + row * act.rows.k;
  float acc = 0.0f;
  for (size_t b = 0; b < act.rows.blocks(); ++b) {
    const BlockParts& parts = w.Parts(b * 32, n);
    const long double da = act.scales[row * act.rows.blocks() + b];
    long double sum = 0, activations = 0;
    for (size_t i = 0; i < 32; ++i) {
      sum += parts.q[i] * a[b * 32 + i];
      activations += a[b * 32 + i];
    }
    const float scaled = static_cast<float>(parts.d * da * sum);
    const float mins = static_cast<float>(parts.m * da * activations);
    acc = acc + (scaled + mins);
  }
  return acc;
}

TEST(Int8Q4_1PackTest, QuadRelayoutIsLossless) {
  for (CompressedFormat type : kTypes) {
    ASSERT_TRUE(int8_test::RelayoutIsLosslessForEveryColumnCount(type, 512, [type](size_t rows, size_t cols,
                                                                                    Inputs& inputs) {
      return Q4_1Case::Random(type, rows, cols, inputs);
    })) << CompressedFormatName(type);
  }
}

TEST_P(Int8Q4_1Test, MatMulEqualsTwinAndFormulaForEveryShape) {
  for (CompressedFormat type : kTypes) {
    const auto make = [type](size_t rows, size_t cols, Inputs& inputs) {
      return Q4_1Case::Random(type, rows, cols, inputs);
    };
    ASSERT_TRUE(int8_test::EveryShapeMatchesTwinAndFormula(static_cast<size_t>(type), {32, 96, 256, 544},
                                                           make, Formula))
        << CompressedFormatName(type);
  }
}

// Every quant at its largest (15, 31) in even columns and 0 in odd ones, d = 1 and
// m = −2, against activation quants of +127 and of ±127 in pairs: the largest byte
// products AVX2's pairs add in int16 (31·127 per product), and a minimum that the
// activations' sum decides. Fast == twin == formula, and column 0 by hand.
TEST_P(Int8Q4_1Test, ExtremeValuesSumExactly) {
  const size_t rows = 512, cols = 64;
  for (CompressedFormat type : kTypes) {
    const size_t block_bytes = GgmlBlockBytes(type);
    const size_t blocks = cols * rows / 32;
    std::vector<uint8_t> ggml(blocks * block_bytes);
    for (size_t i = 0; i < blocks; ++i) {
      uint8_t* block = ggml.data() + i * block_bytes;
      const size_t n = i / (rows / 32);
      block[0] = 0x00;  // d = 1.0
      block[1] = 0x3C;
      block[2] = 0x00;  // m = −2.0
      block[3] = 0xC0;
      const uint8_t bits = n % 2 == 0 ? 0xFF : 0x00;
      std::memset(block + 4, bits, block_bytes - 4);
    }
    Q4_1Case w(type, rows, cols, ggml);
    Inputs inputs(simd_test::CaseSeed(rows, cols, 74));
    Activations act(1, rows, inputs);
    ASSERT_TRUE(int8_test::SetExtremeActivations(&act));
    std::vector<float> y;
    ASSERT_TRUE(int8_test::OneRowMatchesTwinAndFormula(
        act, w.quads, [&](size_t n) { return Formula(w, act, 0, n); }, &y)) << CompressedFormatName(type);
    // Column 0: 256 values of q_max − 2 against +127, and 256 whose ±127 pairs cancel.
    const float q_max = type == CompressedFormat::kQ4_1 ? 15.0f : 31.0f;
    ASSERT_FLOAT_EQ(y[0], (q_max - 2.0f) * 127 * 256 * act.scales[0]) << CompressedFormatName(type);
    // Column 1: every value is m = −2.
    ASSERT_FLOAT_EQ(y[1], -2.0f * 127 * 256 * act.scales[0]) << CompressedFormatName(type);
  }
}

TEST_P(Int8Q4_1Test, PanelRangesWriteOnlyTheirColumns) {
  for (CompressedFormat type : kTypes) {
    const size_t rows = 256, cols = 300;  // 10 panels, the last one partial
    Inputs inputs(simd_test::CaseSeed(rows, cols, 60 + static_cast<size_t>(type)));
    const Q4_1Case w = Q4_1Case::Random(type, rows, cols, inputs);
    Activations act(2, rows, inputs);
    ASSERT_TRUE(int8_test::PanelRangesWriteOnlyTheirColumns(act, w.quads)) << CompressedFormatName(type);
  }
}

}  // namespace
}  // namespace kvrt::simd
