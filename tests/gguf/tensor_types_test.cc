// ggml type traits, f16/bf16 conversions and the Q8_0/Q4_0 block codecs.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "formats/gguf/tensor_types.h"

namespace kvrt::gguf {
namespace {

TEST(TensorTypes, BlockGeometry) {
  EXPECT_EQ(RowBytes(GgmlType::kF32, 64), 256u);
  EXPECT_EQ(RowBytes(GgmlType::kF16, 64), 128u);
  EXPECT_EQ(RowBytes(GgmlType::kBF16, 64), 128u);
  EXPECT_EQ(RowBytes(GgmlType::kQ8_0, 64), 68u);
  EXPECT_EQ(RowBytes(GgmlType::kQ4_0, 64), 36u);
  EXPECT_EQ(RowBytes(GgmlType::kQ6_K, 256), 210u);
  EXPECT_FALSE(RowBytes(GgmlType::kQ8_0, 48));
  EXPECT_FALSE(FindGgmlType(4));  // Q4_2: removed from GGUF
  EXPECT_FALSE(FindGgmlType(39));
  EXPECT_EQ(FindGgmlType(30)->name, "BF16");
}

TEST(TensorTypes, UnsupportedTypesAreNamed) {
  Result<void> iq2 = RequireSupported(GgmlType::kIQ2_XXS, "blk.0.attn_q.weight");
  ASSERT_FALSE(iq2);
  EXPECT_EQ(iq2.error().code(), ErrorCode::kUnsupportedTensorType);
  EXPECT_EQ(iq2.error().message(),
            "tensor blk.0.attn_q.weight has type IQ2_XXS, which kvrt does not read (supported: F32, F16, Q4_0, "
            "Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, BF16)");
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0,
                        GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ2_K, GgmlType::kQ3_K,
                        GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kIQ4_NL,
                        GgmlType::kIQ4_XS}) {
    EXPECT_TRUE(RequireSupported(type, "t")) << GgmlTypeName(type);
  }
  // Writing stays with the types kvrt quantizes to.
  Result<void> q6 = RequireWritable(GgmlType::kQ6_K, "output.weight");
  ASSERT_FALSE(q6);
  EXPECT_EQ(q6.error().message(),
            "tensor output.weight has type Q6_K, which kvrt does not write (F32, F16, Q4_0, Q8_0, BF16)");
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    EXPECT_TRUE(RequireWritable(type, "t"));
  }
}

TEST(TensorTypes, HalfConversionIsExactAndRoundsToNearestEven) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    const uint32_t exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
    if (exponent == 31 && mantissa != 0) {
      EXPECT_TRUE(std::isnan(f));
      EXPECT_EQ(FloatToHalf(f) & 0x7E00, 0x7E00) << h;  // quiet NaN
      continue;
    }
    EXPECT_EQ(FloatToHalf(f), h) << h;  // every half round-trips, subnormals and infinities included
    const double expected = exponent == 0 ? std::ldexp(mantissa, -24)
                            : exponent == 31 ? INFINITY
                                             : std::ldexp(1024 + mantissa, static_cast<int>(exponent) - 25);
    EXPECT_EQ(static_cast<double>(f), (h & 0x8000) ? -expected : expected) << h;
  }
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie → even (down)
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie → even (up)
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);             // half of the smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7C00);
  EXPECT_EQ(FloatToHalf(-1e30f), 0xFC00);
}

TEST(TensorTypes, Bf16IsTheUpperHalfRoundedToNearestEven) {
  EXPECT_EQ(Bf16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(FloatToBf16(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // tie → even
  EXPECT_EQ(FloatToBf16(std::bit_cast<float>(0x3F818000u)), 0x3F82);
  EXPECT_EQ(FloatToBf16(std::bit_cast<float>(0x3F808001u)), 0x3F81);
  EXPECT_EQ(FloatToBf16(std::bit_cast<float>(0x7F800001u)), 0x7FC0);  // signalling NaN → quiet
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = Bf16ToFloat(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      EXPECT_EQ(FloatToBf16(f), b);
    }
  }
}

TEST(TensorTypes, Q8_0AndQ4_0BlocksDecodeAsDocumented) {
  // Q8_0: {f16 d, int8 q[32]}, value d·q.
  std::vector<uint8_t> q8(34);
  q8[0] = 0x00;
  q8[1] = 0x38;  // d = 0.5
  for (int j = 0; j < 32; ++j) q8[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
  std::vector<float> out(32);
  Dequantize(GgmlType::kQ8_0, q8, out);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(out[j], 0.5f * static_cast<float>(j - 16));
  // Q4_0: {f16 d, u8 qs[16]}: element j < 16 is the low nibble of byte j,
  // element j + 16 the high nibble; value d·(nibble − 8).
  std::vector<uint8_t> q4(18);
  q4[0] = 0x00;
  q4[1] = 0x40;  // d = 2
  for (int j = 0; j < 16; ++j) q4[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  Dequantize(GgmlType::kQ4_0, q4, out);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(out[j], 2.0f * static_cast<float>(j - 8));
    EXPECT_EQ(out[j + 16], 2.0f * static_cast<float>(7 - j));
  }
}

TEST(TensorTypes, QuantizersFollowGgml) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = std::sin(static_cast<float>(j)) * 3.0f;
  x[5] = -4.0f;  // largest magnitude, negative
  std::vector<uint8_t> q8(34), q4(18);
  Quantize(GgmlType::kQ8_0, x, q8);
  Quantize(GgmlType::kQ4_0, x, q4);
  std::vector<float> back(32);
  Dequantize(GgmlType::kQ8_0, q8, back);
  const float d8 = HalfToFloat(FloatToHalf(4.0f / 127.0f));
  for (int j = 0; j < 32; ++j) EXPECT_LE(std::fabs(back[j] - x[j]), d8 * 0.51f + 1e-3f) << j;
  EXPECT_EQ(static_cast<int8_t>(q8[2 + 5]), -127);
  Dequantize(GgmlType::kQ4_0, q4, back);
  // d = max/−8 = 0.5: the extreme maps to nibble 0 (value −8·d = −4) exactly.
  EXPECT_EQ(HalfToFloat(static_cast<uint16_t>(q4[0] | (q4[1] << 8))), 0.5f);
  EXPECT_EQ(back[5], -4.0f);
  for (int j = 0; j < 32; ++j) EXPECT_LE(std::fabs(back[j] - x[j]), 0.5f * 0.5f + 1e-6f) << j;
  // An all-zero block has d = 0 and decodes to zeros.
  std::vector<float> zeros(32, 0.0f);
  Quantize(GgmlType::kQ4_0, zeros, q4);
  Dequantize(GgmlType::kQ4_0, q4, back);
  for (float v : back) EXPECT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace kvrt::gguf
