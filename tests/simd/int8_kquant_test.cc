// The int8-activation path for the K-quants (q4_k, q5_k, q6_k; int8_activations.h) on
// every compiled target: the quad relayout (nibbles and high-bit planes) is lossless,
// MatMulInt8 equals its scalar twin BIT FOR BIT for every row count, column remainder
// and panel range, one row alone equals the same row inside a tile, and the twin equals
// the header's formula evaluated from ggml's own blocks of each column (decoded here,
// independently of the panel layout), also where the quants and activations sit at the
// ends of their ranges (the int16 budgets of AVX2's byte pairs).
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

using simd_test::Inputs;

class Int8KQuantTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(Int8KQuantTest);

constexpr CompressedFormat kTypes[] = {CompressedFormat::kQ4_K, CompressedFormat::kQ5_K,
                                       CompressedFormat::kQ6_K, CompressedFormat::kQ3_K};
using int8_test::Activations;

size_t GgmlBlockBytes(CompressedFormat type) {
  return type == CompressedFormat::kQ4_K   ? 144
         : type == CompressedFormat::kQ5_K ? 176
         : type == CompressedFormat::kQ6_K ? 210
                                           : 110;
}

// One ggml super-block of 256 values decoded into its parts (ggml-common.h's layouts,
// the order of dequantize_row_q4_K / _q5_K / _q6_K / _q3_K): q4_k/q5_k x = d·sc_s·q −
// dmin·m_s per sub-block s of 32; q6_k x = d·sc_s·(q − 32) and q3_k x = d·sc_s·(q − 4)
// per sub-block s of 16 (q3_k: sc the 6-bit scale − 32, q = low 2 bits + 4·high bit).
struct SuperBlockParts {
  float d = 0, dmin = 0;
  int sc[16] = {}, m[16] = {};
  int q[256] = {};
};

SuperBlockParts Decode(CompressedFormat type, const uint8_t* block) {
  SuperBlockParts parts;
  auto f16 = [](const uint8_t* p) { return F16ToF32(static_cast<uint16_t>(p[0] | p[1] << 8)); };
  if (type == CompressedFormat::kQ3_K) {
    const uint8_t* hmask = block;
    const uint8_t* qs = block + 32;
    const uint8_t* scales = block + 96;
    parts.d = f16(block + 108);
    for (int s = 0; s < 16; ++s) {
      const int low = s < 8 ? scales[s % 8] >> (s < 8 ? 0 : 4) & 0xF : scales[s % 8] >> 4;
      const int high = scales[8 + s % 4] >> (2 * (s / 4)) & 3;
      parts.sc[s] = (low | high << 4) - 32;
    }
    for (int chunk = 0; chunk < 2; ++chunk) {
      for (int j = 0; j < 4; ++j) {
        for (int l = 0; l < 32; ++l) {
          const int low = qs[32 * chunk + l] >> (2 * j) & 3;
          const int high = hmask[l] >> (4 * chunk + j) & 1;
          parts.q[128 * chunk + 32 * j + l] = low + 4 * high;
        }
      }
    }
    return parts;
  }
  if (type == CompressedFormat::kQ6_K) {
    const uint8_t* ql = block;
    const uint8_t* qh = block + 128;
    const auto* scales = reinterpret_cast<const int8_t*>(block + 192);
    parts.d = f16(block + 208);
    for (int s = 0; s < 16; ++s) parts.sc[s] = scales[s];
    for (int half = 0; half < 2; ++half) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t* low = ql + 64 * half;
        const uint8_t high = qh[32 * half + l];
        int* q = parts.q + 128 * half;
        q[l] = (low[l] & 0xF) | (high & 3) << 4;
        q[l + 32] = (low[l + 32] & 0xF) | (high >> 2 & 3) << 4;
        q[l + 64] = (low[l] >> 4) | (high >> 4 & 3) << 4;
        q[l + 96] = (low[l + 32] >> 4) | (high >> 6 & 3) << 4;
      }
    }
    return parts;
  }
  parts.d = f16(block);
  parts.dmin = f16(block + 2);
  const uint8_t* scales = block + 4;
  for (int s = 0; s < 8; ++s) {
    if (s < 4) {
      parts.sc[s] = scales[s] & 63;
      parts.m[s] = scales[s + 4] & 63;
    } else {
      parts.sc[s] = (scales[s + 4] & 0xF) | (scales[s - 4] >> 6) << 4;
      parts.m[s] = (scales[s + 4] >> 4) | (scales[s] >> 6) << 4;
    }
  }
  const bool five = type == CompressedFormat::kQ5_K;
  const uint8_t* qh = block + 16;
  const uint8_t* qs = block + (five ? 48 : 16);
  for (int chunk = 0; chunk < 4; ++chunk) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t byte = qs[32 * chunk + l];
      int low = byte & 0xF, high = byte >> 4;
      if (five) {
        low |= (qh[l] >> (2 * chunk) & 1) << 4;
        high |= (qh[l] >> (2 * chunk + 1) & 1) << 4;
      }
      parts.q[64 * chunk + l] = low;
      parts.q[64 * chunk + 32 + l] = high;
    }
  }
  return parts;
}

// A [K, N] K-quant matrix from ggml rows (one per column), in the row layout and in the
// quad layout, with every column's decoded super-blocks.
struct KQuantCase : int8_test::DecodedGgmlQuads<SuperBlockParts, 256> {
  KQuantCase(CompressedFormat format, size_t rows, size_t cols, std::vector<uint8_t> ggml_rows)
      : DecodedGgmlQuads(format, rows, cols, std::move(ggml_rows)) {
    for (size_t n = 0; n < cols; ++n) {
      for (size_t s = 0; s < rows / 256; ++s) {
        parts.push_back(Decode(type, ggml.data() + (n * rows / 256 + s) * GgmlBlockBytes(type)));
      }
    }
  }
  // From random values, quantized by ggml's reference quantizer column by column.
  static KQuantCase Random(CompressedFormat type, size_t rows, size_t cols, Inputs& inputs) {
    const auto quantize = [type](const float* x, uint8_t* out) {
      if (type == CompressedFormat::kQ4_K) QuantizeBlockQ4_K(x, out);
      if (type == CompressedFormat::kQ5_K) QuantizeBlockQ5_K(x, out);
      if (type == CompressedFormat::kQ6_K) QuantizeBlockQ6_K(x, out);
      if (type == CompressedFormat::kQ3_K) QuantizeBlockQ3_K(x, out);
    };
    return KQuantCase(type, rows, cols,
                      int8_test::RandomGgmlRows(rows, cols, 256, GgmlBlockBytes(type), quantize, inputs));
  }
};

// The header's formula from the decoded ggml parts, every integer and product exact in
// long double, each rounding where the header puts one.
float Formula(const KQuantCase& w, const Activations& act, size_t row, size_t n) {
  const int8_t* a = act.quants.data() + row * act.rows.k;
  float acc = 0.0f;
  for (size_t b = 0; b < act.rows.blocks(); ++b) {
    const size_t k0 = b * 32;
    const SuperBlockParts& parts = w.Parts(k0, n);
    const long double da = act.scales[row * act.rows.blocks() + b];
    if (w.type == CompressedFormat::kQ6_K || w.type == CompressedFormat::kQ3_K) {
      const int offset = w.type == CompressedFormat::kQ6_K ? 32 : 4;
      long double total = 0;
      for (size_t k = k0; k < k0 + 32; ++k)
        total += parts.sc[k % 256 / 16] * (parts.q[k % 256] - offset) * a[k];
      acc = acc + static_cast<float>(parts.d * da * total);
    } else {
      long double sum = 0, activation_sum = 0;
      for (size_t k = k0; k < k0 + 32; ++k) {
        sum += parts.q[k % 256] * a[k];
        activation_sum += a[k];
      }
      const size_t s = k0 % 256 / 32;
      const auto scaled = static_cast<float>(parts.d * da * parts.sc[s] * sum);
      const auto mins = static_cast<float>(parts.dmin * da * parts.m[s] * activation_sum);
      acc = acc + (scaled - mins);
    }
  }
  return acc;
}

TEST(Int8KQuantPackTest, QuadRelayoutIsLossless) {
  for (CompressedFormat type : kTypes) {
    ASSERT_TRUE(int8_test::RelayoutIsLosslessForEveryColumnCount(type, 512, [type](size_t rows, size_t cols,
                                                                                    Inputs& inputs) {
      return KQuantCase::Random(type, rows, cols, inputs);
    })) << CompressedFormatName(type);
  }
}

TEST_P(Int8KQuantTest, MatMulEqualsTwinAndFormulaForEveryShape) {
  for (CompressedFormat type : kTypes) {
    const auto make = [type](size_t rows, size_t cols, Inputs& inputs) {
      return KQuantCase::Random(type, rows, cols, inputs);
    };
    ASSERT_TRUE(int8_test::EveryShapeMatchesTwinAndFormula(static_cast<size_t>(type), {256, 512}, make, Formula))
        << CompressedFormatName(type);
  }
}

// Every quant at the top of its range (q3_k 7, q4_k 15, q5_k 31, q6_k 63; q6_k's scales ±127
// and −128) against activation quants of +127 and of ±127 in pairs: the largest int16
// pair sums AVX2's byte pairs add before widening, and the largest integers the header
// says stay exact. Fast == twin == formula.
TEST_P(Int8KQuantTest, ExtremeQuantsSumExactly) {
  const size_t rows = 512, cols = 64;
  for (CompressedFormat type : kTypes) {
    const size_t block_bytes = GgmlBlockBytes(type);
    std::vector<uint8_t> ggml(cols * rows / 256 * block_bytes, 0xFF);
    for (size_t i = 0; i < cols * rows / 256; ++i) {
      uint8_t* block = ggml.data() + i * block_bytes;
      const size_t n = i / (rows / 256);
      if (type == CompressedFormat::kQ3_K) {
        // Every quant 3 + 4 = 7 (value 3) and every scale 63 − 32 = 31, or all quants
        // 0 (value −4); d = 1.0.
        if (n % 4 == 3) std::memset(block, 0x00, 96);
        block[108] = 0x00;
        block[109] = 0x3C;
      } else if (type == CompressedFormat::kQ6_K) {
        for (size_t s = 0; s < 16; ++s)
          block[192 + s] = static_cast<uint8_t>(n % 3 == 0 ? -128 : n % 3 == 1 ? 127 : -127);
        if (n % 4 == 3) std::memset(block, 0x00, 192);  // q = 0: value −32
        block[208] = 0x00;                              // d = 1.0
        block[209] = 0x3C;
      } else {
        block[0] = 0x00;  // d = 1.0
        block[1] = 0x3C;
        block[2] = 0x00;  // dmin = 0.5
        block[3] = 0x38;
        if (n % 4 == 3) std::memset(block + 4, 0x00, 12);  // sc = m = 0
      }
    }
    KQuantCase w(type, rows, cols, ggml);
    Inputs inputs(simd_test::CaseSeed(rows, cols, 71));
    Activations act(1, rows, inputs);
    ASSERT_TRUE(int8_test::SetExtremeActivations(&act));
    std::vector<float> y;
    ASSERT_TRUE(int8_test::OneRowMatchesTwinAndFormula(
        act, w.quads, [&](size_t n) { return Formula(w, act, 0, n); }, &y)) << CompressedFormatName(type);
  }
}

TEST_P(Int8KQuantTest, PanelRangesWriteOnlyTheirColumns) {
  for (CompressedFormat type : kTypes) {
    const size_t rows = 256, cols = 300;  // 10 panels, the last one partial
    Inputs inputs(simd_test::CaseSeed(rows, cols, 40 + static_cast<size_t>(type)));
    const KQuantCase w = KQuantCase::Random(type, rows, cols, inputs);
    Activations act(2, rows, inputs);
    ASSERT_TRUE(int8_test::PanelRangesWriteOnlyTheirColumns(act, w.quads)) << CompressedFormatName(type);
  }
}

}  // namespace
}  // namespace kvrt::simd
