// The int8-activation path for iq4_nl and iq4_xs (int8_activations.h) on every compiled
// target: their indices move into q4_0's nibble quads losslessly, MatMulInt8 (which
// looks each index's t + 128 up and takes 128·Σa off) equals its scalar twin BIT FOR BIT
// for every row count, column remainder and panel range, and the twin equals the
// header's formula evaluated from ggml's own blocks of each column (decoded here with
// the table written out again, independently of the panel layout), also with every
// value at the table's ends against activations of ±127 and iq4_xs's scales at −32 and
// 31, where the integers are largest (AVX2's byte pairs, iq4_xs's sc·S near 2^24).
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

class Int8IQ4Test : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(Int8IQ4Test);

constexpr CompressedFormat kTypes[] = {CompressedFormat::kIQ4_NL, CompressedFormat::kIQ4_XS};

// ggml-common.h's kvalues_iq4nl, written out here rather than taken from the library.
constexpr int kTable[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                            1,    13,   25,  38,  53,  69,  89,  113};

// ggml's block sizes: iq4_nl {f16 d; u8 qs[16]} per 32 values, iq4_xs {f16 d;
// u16 scales_h; u8 scales_l[4]; u8 qs[128]} per 256.
size_t GgmlBlockRows(CompressedFormat type) { return type == CompressedFormat::kIQ4_NL ? 32 : 256; }
size_t GgmlBlockBytes(CompressedFormat type) { return type == CompressedFormat::kIQ4_NL ? 18 : 136; }

// One column's block of 32 values decoded: x = d·sc·t (iq4_nl: sc = 1).
struct BlockParts {
  float d = 0;
  int sc = 1;
  int t[32] = {};
};

float F16At(const uint8_t* p) { return F16ToF32(static_cast<uint16_t>(p[0] | p[1] << 8)); }

// The 32 values of qs[0..16): byte l holds value l (low nibble) and l + 16 (high).
void DecodeNibbles(const uint8_t* qs, BlockParts* parts) {
  for (int l = 0; l < 16; ++l) {
    parts->t[l] = kTable[qs[l] & 0xF];
    parts->t[l + 16] = kTable[qs[l] >> 4];
  }
}

// A ggml block of GgmlBlockRows(type) values as its blocks of 32 (the order of
// dequantize_row_iq4_nl / _iq4_xs; iq4_xs's 6-bit ls from 4 bits of scales_l and 2 of
// scales_h, sc = ls − 32).
std::vector<BlockParts> Decode(CompressedFormat type, const uint8_t* block) {
  if (type == CompressedFormat::kIQ4_NL) {
    BlockParts parts;
    parts.d = F16At(block);
    DecodeNibbles(block + 2, &parts);
    return {parts};
  }
  std::vector<BlockParts> blocks(8);
  const int scales_h = block[2] | block[3] << 8;
  for (int ib = 0; ib < 8; ++ib) {
    blocks[ib].d = F16At(block);
    const int low = block[4 + ib / 2] >> (4 * (ib % 2)) & 0xF;
    const int high = scales_h >> (2 * ib) & 3;
    blocks[ib].sc = (low | high << 4) - 32;
    DecodeNibbles(block + 8 + 16 * ib, &blocks[ib]);
  }
  return blocks;
}

// A [K, N] matrix from ggml rows (one per column), in the row layout and in the quad
// layout, with every column's decoded blocks of 32.
struct IQ4Case : int8_test::DecodedGgmlQuads<BlockParts, 32> {
  IQ4Case(CompressedFormat format, size_t rows, size_t cols, std::vector<uint8_t> ggml_rows)
      : DecodedGgmlQuads(format, rows, cols, std::move(ggml_rows)) {
    const size_t per_column = rows / GgmlBlockRows(type);
    for (size_t n = 0; n < cols; ++n) {
      for (size_t s = 0; s < per_column; ++s) {
        for (const BlockParts& b :
             Decode(type, ggml.data() + (n * per_column + s) * GgmlBlockBytes(type))) {
          parts.push_back(b);
        }
      }
    }
  }
  // From random values, quantized by ggml's reference quantizer column by column.
  static IQ4Case Random(CompressedFormat type, size_t rows, size_t cols, Inputs& inputs) {
    const auto quantize = [type](const float* x, uint8_t* out) {
      if (type == CompressedFormat::kIQ4_NL) QuantizeBlockIQ4_NL(x, out);
      if (type == CompressedFormat::kIQ4_XS) QuantizeBlockIQ4_XS(x, out);
    };
    return IQ4Case(type, rows, cols,
                   int8_test::RandomGgmlRows(rows, cols, GgmlBlockRows(type), GgmlBlockBytes(type),
                                             quantize, inputs));
  }
};

// The header's formula from the decoded ggml parts: per block acc + (d·d_a)·float(sc·S)
// (iq4_nl: sc = 1), every integer and product exact in long double, rounded to f32
// once per product and once per sum, as the header puts them.
float Formula(const IQ4Case& w, const Activations& act, size_t row, size_t n) {
  const int8_t* a = act.quants.data() + row * act.rows.k;
  float acc = 0.0f;
  for (size_t b = 0; b < act.rows.blocks(); ++b) {
    const BlockParts& parts = w.Parts(b * 32, n);
    const long double da = act.scales[row * act.rows.blocks() + b];
    long double sum = 0;
    for (size_t i = 0; i < 32; ++i) sum += parts.t[i] * a[b * 32 + i];
    acc = acc + static_cast<float>(parts.d * da * (parts.sc * sum));
  }
  return acc;
}

TEST(Int8IQ4PackTest, QuadRelayoutIsLossless) {
  for (CompressedFormat type : kTypes) {
    ASSERT_TRUE(int8_test::RelayoutIsLosslessForEveryColumnCount(type, 512, [type](size_t rows, size_t cols,
                                                                                    Inputs& inputs) {
      return IQ4Case::Random(type, rows, cols, inputs);
    })) << CompressedFormatName(type);
  }
}

TEST_P(Int8IQ4Test, MatMulEqualsTwinAndFormulaForEveryShape) {
  for (CompressedFormat type : kTypes) {
    const std::vector<size_t> depths = type == CompressedFormat::kIQ4_NL
                                           ? std::vector<size_t>{32, 96, 256, 544}
                                           : std::vector<size_t>{256, 512};
    const auto make = [type](size_t rows, size_t cols, Inputs& inputs) {
      return IQ4Case::Random(type, rows, cols, inputs);
    };
    ASSERT_TRUE(int8_test::EveryShapeMatchesTwinAndFormula(static_cast<size_t>(type), depths, make, Formula))
        << CompressedFormatName(type);
  }
}

// Every index 0 (−127) or 15 (+113), column by column, against activation quants of
// +127 and of ±127 in pairs; iq4_xs's scales at −32 and 31. The largest byte products
// AVX2's pairs add (|t·a| = 127·127) and iq4_xs's largest |sc·S| (32·32·127·127 <
// 2^24). Fast == twin == formula.
TEST_P(Int8IQ4Test, ExtremeValuesSumExactly) {
  const size_t rows = 512, cols = 64;
  for (CompressedFormat type : kTypes) {
    const size_t block_bytes = GgmlBlockBytes(type);
    const size_t blocks = cols * rows / GgmlBlockRows(type);
    std::vector<uint8_t> ggml(blocks * block_bytes);
    for (size_t i = 0; i < blocks; ++i) {
      uint8_t* block = ggml.data() + i * block_bytes;
      const size_t n = i / (rows / GgmlBlockRows(type));
      block[0] = 0x00;  // d = 1.0
      block[1] = 0x3C;
      const uint8_t index = n % 2 == 0 ? 0x00 : 0xFF;
      if (type == CompressedFormat::kIQ4_NL) {
        std::memset(block + 2, index, 16);
      } else {
        // ls 0 (sc −32) in every block of even columns, 63 (sc 31) in odd ones.
        const uint8_t ls = n % 4 < 2 ? 0x00 : 0xFF;
        std::memset(block + 2, ls, 6);
        std::memset(block + 8, index, 128);
      }
    }
    IQ4Case w(type, rows, cols, ggml);
    Inputs inputs(simd_test::CaseSeed(rows, cols, 73));
    Activations act(1, rows, inputs);
    ASSERT_TRUE(int8_test::SetExtremeActivations(&act));
    std::vector<float> y;
    ASSERT_TRUE(int8_test::OneRowMatchesTwinAndFormula(
        act, w.quads, [&](size_t n) { return Formula(w, act, 0, n); }, &y)) << CompressedFormatName(type);
    // Column 0: 256 values of −127 against +127 and 256 whose ±127 pairs cancel.
    const float column0 = type == CompressedFormat::kIQ4_NL ? -127.0f * 127 * 256 * act.scales[0]
                                                            : 32.0f * 127 * 127 * 256 * act.scales[0];
    ASSERT_FLOAT_EQ(y[0], column0) << CompressedFormatName(type);
  }
}

TEST_P(Int8IQ4Test, PanelRangesWriteOnlyTheirColumns) {
  for (CompressedFormat type : kTypes) {
    const size_t rows = 256, cols = 300;  // 10 panels, the last one partial
    Inputs inputs(simd_test::CaseSeed(rows, cols, 50 + static_cast<size_t>(type)));
    const IQ4Case w = IQ4Case::Random(type, rows, cols, inputs);
    Activations act(2, rows, inputs);
    ASSERT_TRUE(int8_test::PanelRangesWriteOnlyTheirColumns(act, w.quads)) << CompressedFormatName(type);
  }
}

}  // namespace
}  // namespace kvrt::simd
