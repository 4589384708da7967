// Compressed weights (compressed_matrix.h): the half-precision conversions, ggml's block
// quantizers on hand-computed blocks, PackCompressed against RepackGgml of the same ggml
// bytes, at() against an independent decode of those bytes, and zero padding. No
// dispatch, so plain tests.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/simd/matmul.h"
#include "kvrt/simd/matvec.h"
#include "kvrt/simd/pack_matrix.h"
#include "kquant_blocks.h"
#include "simd_test_support.h"

namespace kvrt::simd {
namespace {

using simd_test::Inputs;

constexpr CompressedFormat kAllTypes[] = {CompressedFormat::kBf16, CompressedFormat::kF16,
                                          CompressedFormat::kQ8_0, CompressedFormat::kQ4_0,
                                          CompressedFormat::kQ5_0, CompressedFormat::kQ4_1,
                                          CompressedFormat::kQ5_1, CompressedFormat::kIQ4_NL,
                                          CompressedFormat::kIQ4_XS, CompressedFormat::kQ4_K,
                                          CompressedFormat::kQ5_K, CompressedFormat::kQ6_K,
                                          CompressedFormat::kQ3_K, CompressedFormat::kQ2_K};

// ggml's kvalues_iq4nl (ggml-common.h).
constexpr int kIQ4NLTable[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                 1,    13,   25,  38,  53,  69,  89,  113};

// The super-block types (iq4_xs shares the K-quants' layout).
bool IsKQuant(CompressedFormat type) {
  return type == CompressedFormat::kQ4_K || type == CompressedFormat::kQ5_K ||
         type == CompressedFormat::kQ6_K || type == CompressedFormat::kQ3_K ||
         type == CompressedFormat::kIQ4_XS || type == CompressedFormat::kQ2_K;
}

uint32_t Bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}
float FromBits(uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}
uint16_t U16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

// ---- half precision -------------------------------------------------------------------

TEST(HalfFloatTest, F16KnownValues) {
  EXPECT_EQ(F32ToF16(1.0f), 0x3C00);
  EXPECT_EQ(F32ToF16(-2.0f), 0xC000);
  EXPECT_EQ(F32ToF16(65504.0f), 0x7BFF);              // largest finite
  EXPECT_EQ(F32ToF16(65519.996f), 0x7BFF);            // just below the tie to inf
  EXPECT_EQ(F32ToF16(65520.0f), 0x7C00);              // tie with an odd significand: inf
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: 0
  EXPECT_EQ(F32ToF16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(F32ToF16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 units: tie to even 2
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(F32ToF16(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(F32ToF16(-0.0f), 0x8000);
  EXPECT_EQ(F32ToF16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(F32ToF16(FromBits(0x7F800001)) & 0x7E00, 0x7E00);  // NaN stays a quiet NaN
  EXPECT_EQ(F16ToF32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(F16ToF32(0x3555), 0.333251953125f);
  EXPECT_EQ(Bits(F16ToF32(0x8000)), 0x80000000u);
}

// Every finite f16 survives the round trip, and the midpoint between two neighbours
// rounds to the one with an even significand.
TEST(HalfFloatTest, F16RoundTripAndTiesToEven) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00) continue;  // inf, NaN
    const float v = F16ToF32(static_cast<uint16_t>(h));
    ASSERT_EQ(F32ToF16(v), h) << std::hex << h;
    if ((h & 0x7FFF) == 0x7BFF) continue;
    const double next = F16ToF32(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((static_cast<double>(v) + next) / 2);  // exact
    const uint32_t even = (h & 1) == 0 ? h : h + 1;
    ASSERT_EQ(F32ToF16(mid), even) << std::hex << h;
    ASSERT_EQ(F32ToF16(std::nextafter(mid, 0.0f)), h) << std::hex << h;
  }
}

TEST(HalfFloatTest, Bf16RoundsToNearestEvenLikeGgml) {
  EXPECT_EQ(F32ToBf16(1.0f), 0x3F80);
  EXPECT_EQ(F32ToBf16(FromBits(0x3F808000)), 0x3F80);  // tie, even stays
  EXPECT_EQ(F32ToBf16(FromBits(0x3F818000)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(F32ToBf16(FromBits(0x3F808001)), 0x3F81);
  EXPECT_EQ(F32ToBf16(FromBits(0x7F7FFFFF)), 0x7F80);  // overflow to inf
  EXPECT_EQ(F32ToBf16(FromBits(0x7F800001)), 0x7FC0);  // NaN made quiet
  EXPECT_EQ(F32ToBf16(FromBits(0xFF812345)), 0xFFC1);  // payload top bits kept
  EXPECT_EQ(Bits(Bf16ToF32(0xBF80)), 0xBF800000u);
}

// ---- ggml block quantizers --------------------------------------------------------------

// amax = 127 gives d = 1 and id = 1: the quants are roundf(x), halves away from zero.
TEST(GgmlQuantizeTest, Q8_0HandBlockUnitScale) {
  float x[32] = {127.0f, -2.5f, 2.5f, 0.5f, -0.5f, 1.49f, -126.6f, 0.0f};
  for (int j = 8; j < 32; ++j) x[j] = static_cast<float>(j - 20);
  uint8_t out[34];
  QuantizeBlockQ8_0(x, out);
  EXPECT_EQ(U16(out), 0x3C00);
  const int expected[8] = {127, -3, 3, 1, -1, 1, -127, 0};
  for (int j = 0; j < 8; ++j) EXPECT_EQ(static_cast<int8_t>(out[2 + j]), expected[j]) << j;
  for (int j = 8; j < 32; ++j) EXPECT_EQ(static_cast<int8_t>(out[2 + j]), j - 20) << j;
}

// amax = 1: d = 1/127 in f32 is stored as f16 0x2008 (2^−7·(1 + 8/1024)), but the quants
// use the f32 id = 1/d: x = 100.498/127 gives x·id ≈ 100.498 → 100, where the stored f16
// scale (1/d16 ≈ 127.0078) would have given 101. An all-zero block has d = 0, q = 0.
TEST(GgmlQuantizeTest, Q8_0UsesTheF32InverseScale) {
  float x[32] = {};
  x[0] = -1.0f;
  x[1] = 100.498f / 127.0f;
  x[2] = 0.25f;  // 31.75 → 32
  uint8_t out[34];
  QuantizeBlockQ8_0(x, out);
  EXPECT_EQ(U16(out), 0x2008);
  EXPECT_EQ(static_cast<int8_t>(out[2]), -127);
  EXPECT_EQ(static_cast<int8_t>(out[3]), 100);
  EXPECT_EQ(static_cast<int8_t>(out[4]), 32);
  const float zeros[32] = {};
  QuantizeBlockQ8_0(zeros, out);
  for (uint8_t b : out) EXPECT_EQ(b, 0);
}

// The largest |x| is −8 (first), so d = 1, id = 1 and q = min(15, trunc(x + 8.5)).
TEST(GgmlQuantizeTest, Q4_0HandBlockNegativeMax) {
  float x[32] = {-8.0f, 7.0f, 7.9f, 0.0f, -0.5f, -0.51f, 0.49f, 0.5f, 8.0f};
  const int expected_low[9] = {0, 15, 15, 8, 8, 7, 8, 9, 15};
  for (int j = 16; j < 32; ++j) x[j] = static_cast<float>(j - 24);  // high nibbles 0..15
  uint8_t out[18];
  QuantizeBlockQ4_0(x, out);
  EXPECT_EQ(U16(out), 0x3C00);  // d = −8 / −8 = 1
  for (int j = 0; j < 16; ++j) {
    const int low = j < 9 ? expected_low[j] : 8;  // x = 0 beyond the listed values
    EXPECT_EQ(out[2 + j] & 0xF, low) << j;
    EXPECT_EQ(out[2 + j] >> 4, j) << j;
  }
}

// A positive maximum gives a negative scale (d = 8/−8 = −1); of two elements with the
// same |x|, the first sets the sign.
TEST(GgmlQuantizeTest, Q4_0SignOfTheFirstLargestElement) {
  float x[32] = {};
  x[3] = 8.0f;
  x[5] = -7.0f;
  uint8_t out[18];
  QuantizeBlockQ4_0(x, out);
  EXPECT_EQ(U16(out), 0xBC00);                 // d = −1
  EXPECT_EQ(out[2 + 3] & 0xF, 0);              // trunc(−8 + 8.5) = 0: (0 − 8)·−1 = 8
  EXPECT_EQ(out[2 + 5] & 0xF, 15);             // trunc(7 + 8.5) = 15: 7·−1 = −7
  EXPECT_EQ(out[2 + 0], 8 | 8 << 4);           // zeros: q = 8
  float ties[32] = {};
  ties[0] = 4.0f;
  ties[20] = -4.0f;
  QuantizeBlockQ4_0(ties, out);
  EXPECT_EQ(U16(out), 0xB800);  // 4 first: d = −0.5
  ties[0] = -4.0f;
  ties[20] = 4.0f;
  QuantizeBlockQ4_0(ties, out);
  EXPECT_EQ(U16(out), 0x3800);  // −4 first: d = 0.5
}

// q5_0 is q4_0 with 32 levels: the largest |x| is −16 (first), so d = 1, id = 1 and
// q = min(31, trunc(x + 16.5)); q's fifth bit goes to bit j of qh (little-endian).
TEST(GgmlQuantizeTest, Q5_0HandBlockNegativeMax) {
  float x[32] = {-16.0f, 15.0f, 15.9f, 0.0f, -0.5f, -0.51f, 0.49f, 0.5f, 16.0f};
  const int expected_low[9] = {0, 31, 31, 16, 16, 15, 16, 17, 31};
  for (int j = 16; j < 32; ++j) x[j] = static_cast<float>(2 * (j - 16) - 16);  // q 0, 2, .., 30
  uint8_t out[22];
  QuantizeBlockQ5_0(x, out);
  EXPECT_EQ(U16(out), 0x3C00);  // d = −16 / −16 = 1
  const uint32_t qh = out[2] | out[3] << 8 | out[4] << 16 | static_cast<uint32_t>(out[5]) << 24;
  for (int j = 0; j < 32; ++j) {
    const int q = j < 9 ? expected_low[j] : j < 16 ? 16 : 2 * (j - 16);
    const int low = j < 16 ? out[6 + j] & 0xF : out[6 + j - 16] >> 4;
    EXPECT_EQ(low | static_cast<int>((qh >> j) & 1) << 4, q) << j;
  }
  // A positive maximum gives a negative scale, and an all-zero block d = 0/−16 = −0
  // (ggml's sign too) and q = 16.
  float positive[32] = {};
  positive[7] = 16.0f;
  QuantizeBlockQ5_0(positive, out);
  EXPECT_EQ(U16(out), 0xBC00);
  EXPECT_EQ(out[6 + 7] & 0xF, 0);  // trunc(−16 + 16.5) = 0
  const float zeros[32] = {};
  QuantizeBlockQ5_0(zeros, out);
  EXPECT_EQ(U16(out), 0x8000);
  for (int b = 2; b < 6; ++b) EXPECT_EQ(out[b], 0xFF) << b;
  for (int b = 6; b < 22; ++b) EXPECT_EQ(out[b], 0) << b;
}

// iq4_nl: a block that is the table times 0.5 comes back exactly. Its first value −63.5
// is the largest magnitude, so the first guess d = 63.5/−127 maps every value to the
// wrong end; the trial t = 0 (id = −127/−63.5 = 2) finds the exact fit, d = 0.5. An
// all-zero block gets d = +0 and every index 8 (the table's nearest to 0).
TEST(GgmlQuantizeTest, IQ4_NLHandBlocks) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = 0.5f * static_cast<float>(kIQ4NLTable[(j * 7) % 16]);
  x[0] = -63.5f;
  x[16] = 56.5f;  // index 15: 113·0.5
  uint8_t out[18];
  QuantizeBlockIQ4_NL(x, out);
  EXPECT_EQ(U16(out), 0x3800);  // d = 0.5
  for (int j = 0; j < 32; ++j) {
    const int index = j < 16 ? out[2 + j] & 0xF : out[2 + j - 16] >> 4;
    EXPECT_EQ(0.5f * static_cast<float>(kIQ4NLTable[index]), x[j]) << j;
  }
  const float zeros[32] = {};
  QuantizeBlockIQ4_NL(zeros, out);
  EXPECT_EQ(U16(out), 0x0000);
  for (int b = 2; b < 18; ++b) EXPECT_EQ(out[b], 0x88) << b;
}

// q4_1 splits [min, max] into 15 steps: min −1, max 14 gives d = 1, m = −1, and
// q = min(15, trunc(x + 1 + 0.5)); q5_1 into 31: max 30 gives d = 1 and fifth bits in qh.
TEST(GgmlQuantizeTest, Q4_1AndQ5_1HandBlocks) {
  float x[32] = {-1.0f, 14.0f, 0.0f, -0.5f, -0.51f, 0.49f, 0.5f, 13.9f, 6.4999f};
  const int expected4[9] = {0, 15, 1, 1, 0, 1, 2, 15, 7};
  for (int j = 16; j < 32; ++j) x[j] = static_cast<float>(j - 17);  // q 0..15
  uint8_t out[24];
  QuantizeBlockQ4_1(x, out);
  EXPECT_EQ(U16(out), 0x3C00);      // d = 15/15 = 1
  EXPECT_EQ(U16(out + 2), 0xBC00);  // m = −1
  for (int j = 0; j < 32; ++j) {
    const int q = j < 9 ? expected4[j] : j < 16 ? 1 : j - 16;
    EXPECT_EQ(j < 16 ? out[4 + j] & 0xF : out[4 + j - 16] >> 4, q) << j;
  }
  float y[32] = {};
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(j) - 1.0f;  // −1..30: q = j
  QuantizeBlockQ5_1(y, out);
  EXPECT_EQ(U16(out), 0x3C00);
  EXPECT_EQ(U16(out + 2), 0xBC00);
  const uint32_t qh = out[4] | out[5] << 8 | out[6] << 16 | static_cast<uint32_t>(out[7]) << 24;
  EXPECT_EQ(qh, 0xFFFF0000u);  // q ≥ 16 exactly for j ≥ 16
  for (int j = 0; j < 32; ++j) {
    const int low = j < 16 ? out[8 + j] & 0xF : out[8 + j - 16] >> 4;
    EXPECT_EQ(low | static_cast<int>((qh >> j) & 1) << 4, j) << j;
  }
  // A constant block: d = 0, id = 0, every q = 0 and m the value (2.5, f16 0x4100).
  float flat[32];
  for (float& v : flat) v = 2.5f;
  QuantizeBlockQ5_1(flat, out);
  EXPECT_EQ(U16(out), 0x0000);
  EXPECT_EQ(U16(out + 2), 0x4100);
  for (int b = 4; b < 24; ++b) EXPECT_EQ(out[b], 0) << b;
  QuantizeBlockQ4_1(flat, out);
  EXPECT_EQ(U16(out + 2), 0x4100);
  for (int b = 4; b < 20; ++b) EXPECT_EQ(out[b], 0) << b;
}

// All-zero super-blocks quantize to all-zero bytes (ggml: scale 0 keeps the levels of
// the search, which are 0), and a block whose 16-value groups are each one value times
// ±(0..15) in q4_k / a multiple of one step in q6_k comes back exactly.
TEST(GgmlQuantizeTest, KQuantZeroBlocks) {
  const std::vector<float> zeros(256, 0.0f);
  uint8_t out[210];
  std::memset(out, 0xFF, sizeof(out));
  QuantizeBlockQ4_K(zeros.data(), out);
  for (size_t i = 0; i < 144; ++i) EXPECT_EQ(out[i], 0) << i;
  std::memset(out, 0xFF, sizeof(out));
  QuantizeBlockQ5_K(zeros.data(), out);
  for (size_t i = 0; i < 176; ++i) EXPECT_EQ(out[i], 0) << i;
  std::memset(out, 0xFF, sizeof(out));
  QuantizeBlockQ6_K(zeros.data(), out);
  for (size_t i = 0; i < 210; ++i) EXPECT_EQ(out[i], 0) << i;
  // q3_k: the search's all-zero levels (0, so q − 4 = −4) with d = 0.
  std::memset(out, 0xFF, sizeof(out));
  QuantizeBlockQ3_K(zeros.data(), out);
  for (size_t i = 0; i < 110; ++i) EXPECT_EQ(out[i], 0) << i;
  // q2_k: max == min == 0 in every group: scale 0, levels 0, d = dmin = 0.
  std::memset(out, 0xFF, sizeof(out));
  QuantizeBlockQ2_K(zeros.data(), out);
  for (size_t i = 0; i < 84; ++i) EXPECT_EQ(out[i], 0) << i;
}

// Values on q2_k's own grid with no minimum: each group of 16 holds the levels 0..3
// (four times each, scrambled) times 0.25, so the search fits scale 0.25 and minimum 0,
// every 4-bit scale is 15 against d = 0.25/15 (as f16), and every value comes back as
// its own level: each 2-bit position of every qs byte goes through ggml's packing.
TEST(GgmlQuantizeTest, Q2_KKeepsItsOwnGrid) {
  std::vector<float> x(256);
  for (size_t i = 0; i < 256; ++i) x[i] = 0.25f * static_cast<float>((i * 5 + i / 16) % 4);
  uint8_t out[84];
  QuantizeBlockQ2_K(x.data(), out);
  EXPECT_EQ(U16(out + 80), F32ToF16(0.25f / 15.0f));
  EXPECT_EQ(U16(out + 82), 0);  // dmin: no group needs a minimum
  for (size_t i = 0; i < 256; ++i) {
    const simd_test::KQuantElement e = simd_test::DecodeKQuant(CompressedFormat::kQ2_K, out, i);
    EXPECT_EQ(e.q, static_cast<int>(x[i] * 4.0f)) << i;
    EXPECT_EQ(e.min, 0.0f) << i;
  }
  for (size_t j = 0; j < 16; ++j) EXPECT_EQ(out[j], 15) << j;
}

// Values on q3_k's own grid: one step for the whole block and every level −4..3 in
// every group of 16 (−4 first, so the search's scale is that step): every value
// round-trips, which puts each of the 3 bits of every position through ggml's packing
// (qs pairs, hmask bits).
TEST(GgmlQuantizeTest, Q3_KRoundTripsItsOwnGrid) {
  std::vector<float> x(256);
  for (size_t i = 0; i < 256; ++i) x[i] = 0.5f * static_cast<float>(static_cast<int>((i * 5 + i / 16) % 8) - 4);
  for (size_t g = 0; g < 16; ++g) x[16 * g] = -2.0f;
  uint8_t out[110];
  QuantizeBlockQ3_K(x.data(), out);
  for (size_t i = 0; i < 256; ++i) {
    const simd_test::KQuantElement e = simd_test::DecodeKQuant(CompressedFormat::kQ3_K, out, i);
    EXPECT_EQ(e.scale * static_cast<float>(e.q), x[i]) << i;
  }
}

// An all-zero iq4_xs super-block: every block scale 0, so d = −0/32 = −0 (ggml's sign),
// ls = 0 + 32 (scales_l 0, two high bits 2 per block: 0xAAAA) and every index 8.
TEST(GgmlQuantizeTest, IQ4_XSZeroBlock) {
  const std::vector<float> zeros(256, 0.0f);
  uint8_t out[136];
  QuantizeBlockIQ4_XS(zeros.data(), out);
  EXPECT_EQ(U16(out), 0x8000);
  EXPECT_EQ(U16(out + 2), 0xAAAA);
  for (size_t i = 4; i < 8; ++i) EXPECT_EQ(out[i], 0) << i;
  for (size_t i = 8; i < 136; ++i) EXPECT_EQ(out[i], 0x88) << i;
}

// Values on q6_k's own grid: x = d·sc·(q − 32) with one scale for the whole block and
// every level −32..31 used, so the search picks that scale and every value round-trips.
TEST(GgmlQuantizeTest, Q6_KRoundTripsItsOwnGrid) {
  std::vector<float> x(256);
  for (size_t i = 0; i < 256; ++i) x[i] = 0.25f * static_cast<float>(static_cast<int>((i * 7) % 64) - 32);
  for (size_t g = 0; g < 16; ++g) x[16 * g] = -8.0f;  // −32 steps in every group
  uint8_t out[210];
  QuantizeBlockQ6_K(x.data(), out);
  for (size_t i = 0; i < 256; ++i) {
    const simd_test::KQuantElement e = simd_test::DecodeKQuant(CompressedFormat::kQ6_K, out, i);
    EXPECT_EQ(e.scale * static_cast<float>(e.q), x[i]) << i;
  }
}

// Every sub-block of 32 holds the integers 0..31 (each once, in a scrambled order): the
// search fits scale 1 and minimum 0, every sub-scale is 63 against d = 1/63, and each
// value comes back as its own level, which puts every one of the 5 bits of every
// position through ggml's packing (ql nibbles, qh masks u1/u2).
TEST(GgmlQuantizeTest, Q5_KKeepsAnIntegerGrid) {
  std::vector<float> x(256);
  for (size_t i = 0; i < 256; ++i) x[i] = static_cast<float>((i * 7 + i / 32) % 32);
  uint8_t out[176];
  QuantizeBlockQ5_K(x.data(), out);
  EXPECT_EQ(U16(out), F32ToF16(1.0f / 63.0f));
  EXPECT_EQ(U16(out + 2), 0);  // dmin
  for (size_t i = 0; i < 256; ++i) {
    const simd_test::KQuantElement e = simd_test::DecodeKQuant(CompressedFormat::kQ5_K, out, i);
    EXPECT_EQ(e.q, static_cast<int>(x[i])) << i;
    EXPECT_EQ(e.min, 0.0f) << i;
  }
}

// ---- sizes ---------------------------------------------------------------------------------

TEST(CompressedMatrixTest, SizesAreGgmlBytesPerWeight) {
  EXPECT_TRUE(FitsCompressedFormat(CompressedFormat::kBf16, 7));
  EXPECT_TRUE(FitsCompressedFormat(CompressedFormat::kF16, 7));
  EXPECT_FALSE(FitsCompressedFormat(CompressedFormat::kQ8_0, 48));
  EXPECT_TRUE(FitsCompressedFormat(CompressedFormat::kQ4_0, 64));
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kBf16, 7, 33), 2u * 7 * 2 * 32);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kF16, 768, 768), 768u * 768 * 2);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ8_0, 768, 768), 768u * 768 * 34 / 32);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ4_0, 768, 768), 768u * 768 * 18 / 32);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ4_0, 64, 33), 2u * 2 * 576);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ8_0, 0, 100), 0u);
  const size_t huge = std::numeric_limits<size_t>::max() / 4;
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kBf16, huge, 32), SIZE_MAX);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ8_0, 1u << 20, huge), SIZE_MAX);
  EXPECT_EQ(GgmlRowBytes(CompressedFormat::kQ8_0, 64), 68u);
  EXPECT_EQ(GgmlRowBytes(CompressedFormat::kQ4_0, 64), 36u);
  // q5_0: q4_0's blocks with 4 bytes of high bits per 32 values of a column.
  EXPECT_TRUE(FitsCompressedFormat(CompressedFormat::kQ5_0, 96));
  EXPECT_FALSE(FitsCompressedFormat(CompressedFormat::kQ5_0, 48));
  EXPECT_EQ(CompressedRowMultiple(CompressedFormat::kQ5_0), 32u);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ5_0, 768, 768), 768u * 768 * 22 / 32);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ5_0, 64, 33), 2u * 2 * 704);
  EXPECT_EQ(GgmlRowBytes(CompressedFormat::kQ5_0, 64), 44u);
  // q4_1 and q5_1: a 128-byte scale area (d and m) per block of a panel, ggml's 20 and
  // 24 bytes per 32 weights.
  EXPECT_TRUE(FitsCompressedFormat(CompressedFormat::kQ4_1, 96));
  EXPECT_FALSE(FitsCompressedFormat(CompressedFormat::kQ5_1, 48));
  EXPECT_EQ(CompressedRowMultiple(CompressedFormat::kQ4_1), 32u);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ4_1, 768, 768), 768u * 768 * 20 / 32);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ5_1, 768, 768), 768u * 768 * 24 / 32);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ4_1, 64, 33), 2u * 2 * 640);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ5_1, 64, 33), 2u * 2 * 768);
  EXPECT_EQ(GgmlRowBytes(CompressedFormat::kQ4_1, 64), 40u);
  EXPECT_EQ(GgmlRowBytes(CompressedFormat::kQ5_1, 64), 48u);
  // iq4_xs: q6_k's header of one f16 d, then q4_0's blocks: 4672 bytes per 256 rows.
  EXPECT_EQ(CompressedRowMultiple(CompressedFormat::kIQ4_XS), 256u);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kIQ4_XS, 512, 33), 2u * 2 * 4672);
  EXPECT_EQ(GgmlRowBytes(CompressedFormat::kIQ4_XS, 512), 272u);
  // iq4_nl: q4_0's sizes.
  EXPECT_EQ(CompressedRowMultiple(CompressedFormat::kIQ4_NL), 32u);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kIQ4_NL, 64, 33), 2u * 2 * 576);
  EXPECT_EQ(GgmlRowBytes(CompressedFormat::kIQ4_NL, 64), 36u);
  EXPECT_EQ(GgmlRowBytes(CompressedFormat::kF16, 5), 10u);
  // The K-quants: whole super-blocks of 256 rows, ggml's 144 and 210 bytes per 256
  // weights, plus 4 bytes of unpacked scales and minimums per column for q4_k.
  EXPECT_FALSE(FitsCompressedFormat(CompressedFormat::kQ4_K, 224));
  EXPECT_FALSE(FitsCompressedFormat(CompressedFormat::kQ6_K, 768 + 32));
  EXPECT_TRUE(FitsCompressedFormat(CompressedFormat::kQ6_K, 768));
  EXPECT_EQ(CompressedRowMultiple(CompressedFormat::kQ4_K), 256u);
  EXPECT_EQ(CompressedRowMultiple(CompressedFormat::kQ8_0), 32u);
  EXPECT_EQ(CompressedRowMultiple(CompressedFormat::kBf16), 1u);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ4_K, 768, 768), 768u * 768 * 148 / 256);
  // q5_k: q4_k's scales plus 4 bytes of high bits per 32 values of a column.
  EXPECT_FALSE(FitsCompressedFormat(CompressedFormat::kQ5_K, 512 + 128));
  EXPECT_EQ(CompressedRowMultiple(CompressedFormat::kQ5_K), 256u);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ5_K, 768, 768), 768u * 768 * 180 / 256);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ5_K, 256, 33), 2u * 32 * 180);
  EXPECT_EQ(GgmlRowBytes(CompressedFormat::kQ5_K, 512), 352u);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ6_K, 768, 768), 768u * 768 * 210 / 256);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ6_K, 256, 33), 2u * 32 * 210);
  EXPECT_EQ(GgmlRowBytes(CompressedFormat::kQ4_K, 512), 288u);
  EXPECT_EQ(GgmlRowBytes(CompressedFormat::kQ6_K, 512), 420u);
  // q3_k: q6_k's header and int8 scales with 16-byte rows of nibbles (4 bits a quant).
  EXPECT_FALSE(FitsCompressedFormat(CompressedFormat::kQ3_K, 512 + 128));
  EXPECT_EQ(CompressedRowMultiple(CompressedFormat::kQ3_K), 256u);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ3_K, 768, 768), 768u * 768 * 146 / 256);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ3_K, 256, 33), 2u * 32 * 146);
  EXPECT_EQ(GgmlRowBytes(CompressedFormat::kQ3_K, 512), 220u);
  // q2_k: ggml's own 84 bytes per 256 weights (2.625 bits a weight), 2688 a panel's
  // super-block.
  EXPECT_FALSE(FitsCompressedFormat(CompressedFormat::kQ2_K, 512 + 128));
  EXPECT_EQ(CompressedRowMultiple(CompressedFormat::kQ2_K), 256u);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ2_K, 768, 768), 768u * 768 * 84 / 256);
  EXPECT_EQ(CompressedMatrixBytes(CompressedFormat::kQ2_K, 256, 33), 2u * 2688);
  EXPECT_EQ(GgmlRowBytes(CompressedFormat::kQ2_K, 512), 168u);
}

// ---- packing ------------------------------------------------------------------------------

// ggml's layout of a [K, N] matrix: N rows of K, quantized by the block quantizers.
std::vector<uint8_t> GgmlRows(CompressedFormat type, const std::vector<float>& dense, size_t rows,
                              size_t cols) {
  const size_t row_bytes = GgmlRowBytes(type, rows);
  std::vector<uint8_t> out(cols * row_bytes);
  std::vector<float> column(rows);
  for (size_t n = 0; n < cols; ++n) {
    for (size_t k = 0; k < rows; ++k) column[k] = dense[k * cols + n];
    uint8_t* row = out.data() + n * row_bytes;
    for (size_t k = 0; k < rows; ++k) {
      if (type == CompressedFormat::kBf16 || type == CompressedFormat::kF16) {
        const uint16_t h = type == CompressedFormat::kBf16 ? F32ToBf16(column[k]) : F32ToF16(column[k]);
        row[2 * k] = static_cast<uint8_t>(h);
        row[2 * k + 1] = static_cast<uint8_t>(h >> 8);
      }
    }
    for (size_t b = 0; b < rows / 32 && type == CompressedFormat::kQ8_0; ++b) {
      QuantizeBlockQ8_0(column.data() + 32 * b, row + 34 * b);
    }
    for (size_t b = 0; b < rows / 32 && type == CompressedFormat::kQ4_0; ++b) {
      QuantizeBlockQ4_0(column.data() + 32 * b, row + 18 * b);
    }
    for (size_t b = 0; b < rows / 32 && type == CompressedFormat::kQ5_0; ++b) {
      QuantizeBlockQ5_0(column.data() + 32 * b, row + 22 * b);
    }
    for (size_t b = 0; b < rows / 32 && type == CompressedFormat::kQ4_1; ++b) {
      QuantizeBlockQ4_1(column.data() + 32 * b, row + 20 * b);
    }
    for (size_t b = 0; b < rows / 32 && type == CompressedFormat::kQ5_1; ++b) {
      QuantizeBlockQ5_1(column.data() + 32 * b, row + 24 * b);
    }
    for (size_t b = 0; b < rows / 32 && type == CompressedFormat::kIQ4_NL; ++b) {
      QuantizeBlockIQ4_NL(column.data() + 32 * b, row + 18 * b);
    }
    for (size_t b = 0; b < rows / 256 && type == CompressedFormat::kQ4_K; ++b) {
      QuantizeBlockQ4_K(column.data() + 256 * b, row + 144 * b);
    }
    for (size_t b = 0; b < rows / 256 && type == CompressedFormat::kQ5_K; ++b) {
      QuantizeBlockQ5_K(column.data() + 256 * b, row + 176 * b);
    }
    for (size_t b = 0; b < rows / 256 && type == CompressedFormat::kQ6_K; ++b) {
      QuantizeBlockQ6_K(column.data() + 256 * b, row + 210 * b);
    }
    for (size_t b = 0; b < rows / 256 && type == CompressedFormat::kQ3_K; ++b) {
      QuantizeBlockQ3_K(column.data() + 256 * b, row + 110 * b);
    }
    for (size_t b = 0; b < rows / 256 && type == CompressedFormat::kIQ4_XS; ++b) {
      QuantizeBlockIQ4_XS(column.data() + 256 * b, row + 136 * b);
    }
    for (size_t b = 0; b < rows / 256 && type == CompressedFormat::kQ2_K; ++b) {
      QuantizeBlockQ2_K(column.data() + 256 * b, row + 84 * b);
    }
  }
  return out;
}

// Element (k, n) decoded from ggml's bytes as ggml's dequantizers do.
float GgmlElement(CompressedFormat type, const std::vector<uint8_t>& ggml, size_t rows, size_t k,
                  size_t n) {
  const uint8_t* row = ggml.data() + n * GgmlRowBytes(type, rows);
  switch (type) {
    case CompressedFormat::kBf16: return FromBits(static_cast<uint32_t>(U16(row + 2 * k)) << 16);
    case CompressedFormat::kF16: return F16ToF32(U16(row + 2 * k));
    case CompressedFormat::kQ8_0: {
      const uint8_t* block = row + 34 * (k / 32);
      return static_cast<float>(static_cast<int8_t>(block[2 + k % 32])) * F16ToF32(U16(block));
    }
    case CompressedFormat::kQ4_0: {
      const uint8_t* block = row + 18 * (k / 32);
      const size_t j = k % 32;
      const int q = j < 16 ? block[2 + j] & 0xF : block[2 + j - 16] >> 4;
      return static_cast<float>(q - 8) * F16ToF32(U16(block));
    }
    case CompressedFormat::kIQ4_NL: {
      // ggml's dequantize_row_iq4_nl: d·kvalues_iq4nl[nibble].
      const uint8_t* block = row + 18 * (k / 32);
      const size_t j = k % 32;
      const int q = j < 16 ? block[2 + j] & 0xF : block[2 + j - 16] >> 4;
      return F16ToF32(U16(block)) * static_cast<float>(kIQ4NLTable[q]);
    }
    case CompressedFormat::kQ5_0: {
      // ggml's dequantize_row_q5_0: qh a little-endian uint32 after d, element j's fifth
      // bit at bit j.
      const uint8_t* block = row + 22 * (k / 32);
      const size_t j = k % 32;
      const int low = j < 16 ? block[6 + j] & 0xF : block[6 + j - 16] >> 4;
      const int high = (block[2 + j / 8] >> (j % 8)) & 1;
      return static_cast<float>((low | high << 4) - 16) * F16ToF32(U16(block));
    }
    case CompressedFormat::kQ4_1:
    case CompressedFormat::kQ5_1: {
      // ggml's dequantize_row_q4_1 / _q5_1: q·d + m; q5_1's qh after d and m, element
      // j's fifth bit at bit j.
      const bool q5 = type == CompressedFormat::kQ5_1;
      const uint8_t* block = row + (q5 ? 24 : 20) * (k / 32);
      const uint8_t* qs = block + (q5 ? 8 : 4);
      const size_t j = k % 32;
      int q = j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4;
      if (q5) q |= ((block[4 + j / 8] >> (j % 8)) & 1) << 4;
      return static_cast<float>(q) * F16ToF32(U16(block)) + F16ToF32(U16(block + 2));
    }
    case CompressedFormat::kQ4_K:
    case CompressedFormat::kQ5_K:
    case CompressedFormat::kQ2_K: {
      const simd_test::KQuantElement e = simd_test::DecodeKQuant(type, row, k);
      return e.scale * static_cast<float>(e.q) - e.min;
    }
    case CompressedFormat::kQ6_K:
    case CompressedFormat::kQ3_K:
    case CompressedFormat::kIQ4_XS: {
      const simd_test::KQuantElement e = simd_test::DecodeKQuant(type, row, k);
      return e.scale * static_cast<float>(e.q);
    }
  }
  return NAN;
}

struct Packed {
  hwy::AlignedFreeUniquePtr<uint8_t[]> bytes;
  CompressedMatrixView view;
};
Packed Allocate(CompressedFormat type, size_t rows, size_t cols, uint8_t fill) {
  const size_t size = CompressedMatrixBytes(type, rows, cols);
  Packed p{hwy::AllocateAligned<uint8_t>(size + 1), {}};
  std::memset(p.bytes.get(), fill, size + 1);
  p.view = {type, p.bytes.get(), rows, cols};
  return p;
}

// For every type, shapes with every N % 32 class of interest: PackCompressed (from either
// source orientation) equals RepackGgml of ggml's bytes byte for byte, every byte of the
// storage is written, at() equals ggml's dequantization, GatherColumn equals at(), and the
// padding columns are +0.
TEST(CompressedMatrixTest, PackEqualsRepackAndAtEqualsGgmlDequantization) {
  for (CompressedFormat type : kAllTypes) {
    const std::vector<size_t> row_counts = IsKQuant(type) ? std::vector<size_t>{256, 512}
                                                          : std::vector<size_t>{32, 64, 96, 256};
    for (size_t rows : row_counts) {
      for (size_t cols : {1, 5, 16, 31, 32, 33, 64, 70, 130}) {
        Inputs inputs(simd_test::CaseSeed(rows, cols, static_cast<size_t>(type)));
        auto dense = inputs.Uniform<float>(rows * cols, -1, 1);
        dense[0] = 3.0f;  // blocks with very different scales
        std::vector<float> transposed(rows * cols);
        for (size_t k = 0; k < rows; ++k) {
          for (size_t n = 0; n < cols; ++n) transposed[n * rows + k] = dense[k * cols + n];
        }
        const auto ggml = GgmlRows(type, dense, rows, cols);
        const size_t size = CompressedMatrixBytes(type, rows, cols);
        Packed from_ggml = Allocate(type, rows, cols, 0xA5);
        Packed packed = Allocate(type, rows, cols, 0x5A);
        Packed packed_t = Allocate(type, rows, cols, 0x77);
        RepackGgml(type, ggml.data(), rows, cols, from_ggml.bytes.get());
        PackCompressed(type, dense.data(), rows, cols, false, packed.bytes.get());
        PackCompressed(type, transposed.data(), rows, cols, true, packed_t.bytes.get());
        const auto where = ::testing::Message() << CompressedFormatName(type) << " K=" << rows << " N=" << cols;
        ASSERT_EQ(std::memcmp(from_ggml.bytes.get(), packed.bytes.get(), size), 0) << where;
        ASSERT_EQ(std::memcmp(packed_t.bytes.get(), packed.bytes.get(), size), 0) << where;
        ASSERT_EQ(packed.bytes[size], 0x5A) << where << ": wrote past the end";
        const CompressedMatrixView& w = packed.view;
        std::vector<float> column(rows);
        for (size_t n = 0; n < w.panels() * 32; ++n) {
          if (n < cols) GatherColumn(w, n, column.data());
          for (size_t k = 0; k < rows; ++k) {
            if (n >= cols) {
              ASSERT_EQ(Bits(w.at(k, n)), 0u) << where << " padding k=" << k << " n=" << n;
              continue;
            }
            const float expected = GgmlElement(type, ggml, rows, k, n);
            ASSERT_EQ(Bits(w.at(k, n)), Bits(expected)) << where << " k=" << k << " n=" << n;
            ASSERT_EQ(Bits(column[k]), Bits(expected)) << where << " k=" << k << " n=" << n;
          }
        }
      }
    }
  }
}

// bf16 and f16 store any K, and each element is the rounded source element.
TEST(CompressedMatrixTest, HalfTypesAnyRowCount) {
  for (size_t rows : {1, 7, 33}) {
    Inputs inputs(simd_test::CaseSeed(rows));
    const auto dense = inputs.WideExponents<float>(rows * 40, 1, 20);
    for (CompressedFormat type : {CompressedFormat::kBf16, CompressedFormat::kF16}) {
      Packed p = Allocate(type, rows, 40, 0xFF);
      PackCompressed(type, dense.data(), rows, 40, false, p.bytes.get());
      for (size_t k = 0; k < rows; ++k) {
        for (size_t n = 0; n < 64; ++n) {
          const float expected =
              n >= 40 ? 0.0f
                      : (type == CompressedFormat::kBf16 ? Bf16ToF32(F32ToBf16(dense[k * 40 + n]))
                                                   : F16ToF32(F32ToF16(dense[k * 40 + n])));
          ASSERT_EQ(Bits(p.view.at(k, n)), Bits(expected)) << k << " " << n;
        }
      }
    }
  }
}

// ggml bytes that the quantizers never produce (q8_0 quant −128, any q4_0 nibble with
// any scale, f16 subnormal scales) survive RepackGgml unchanged.
TEST(CompressedMatrixTest, RepackIsLosslessForArbitraryBytes) {
  const size_t cols = 37;
  for (CompressedFormat type : kAllTypes) {
    const size_t rows = IsKQuant(type) ? 512 : 64;
    std::vector<uint8_t> ggml(cols * GgmlRowBytes(type, rows));
    uint32_t state = 12345;
    for (uint8_t& b : ggml) {
      state = state * 1664525u + 1013904223u;
      b = static_cast<uint8_t>(state >> 24);
    }
    // Keep the halves and scales finite (exponent field not all ones): every 16-bit
    // value, q8_0/q4_0/q5_0/iq4_nl d, q4_k/q5_k d and dmin, q6_k d.
    const size_t stride = type == CompressedFormat::kQ8_0   ? 34
                          : type == CompressedFormat::kQ4_0 ? 18
                          : type == CompressedFormat::kIQ4_NL ? 18
                          : type == CompressedFormat::kQ5_0 ? 22
                          : type == CompressedFormat::kQ4_1 ? 20
                          : type == CompressedFormat::kQ5_1 ? 24
                          : type == CompressedFormat::kQ4_K ? 144
                          : type == CompressedFormat::kQ5_K ? 176
                          : type == CompressedFormat::kQ6_K ? 210
                          : type == CompressedFormat::kQ3_K ? 110
                          : type == CompressedFormat::kIQ4_XS ? 136
                          : type == CompressedFormat::kQ2_K ? 84
                                                            : 2;
    std::vector<size_t> halves = {0};
    if (type == CompressedFormat::kQ4_K || type == CompressedFormat::kQ5_K ||
        type == CompressedFormat::kQ4_1 || type == CompressedFormat::kQ5_1) {
      halves = {0, 2};  // d and dmin, or d and m
    }
    if (type == CompressedFormat::kQ6_K || type == CompressedFormat::kQ3_K) halves = {type == CompressedFormat::kQ6_K ? size_t{208} : size_t{108}};
    if (type == CompressedFormat::kQ2_K) halves = {80, 82};
    for (size_t i = 0; i < ggml.size(); i += stride) {
      for (size_t h : halves) {
        const bool bf16 = type == CompressedFormat::kBf16;
        uint8_t& top = ggml[i + h + 1];
        if (bf16 ? (top & 0x7F) == 0x7F : (top & 0x7C) == 0x7C) top ^= 0x40;
      }
    }
    Packed p = Allocate(type, rows, cols, 0);
    RepackGgml(type, ggml.data(), rows, cols, p.bytes.get());
    for (size_t n = 0; n < cols; ++n) {
      for (size_t k = 0; k < rows; ++k) {
        ASSERT_EQ(Bits(p.view.at(k, n)), Bits(GgmlElement(type, ggml, rows, k, n)))
            << CompressedFormatName(type) << " k=" << k << " n=" << n;
      }
    }
  }
}

// The twins are the f32 twins on the dequantized matrix, bit for bit (same products, same
// order), for panel ranges and strided MatMul rows.
TEST(CompressedMatrixTest, TwinsEqualF32TwinsOnTheDequantizedMatrix) {
  const size_t cols = 75, m = 3, ldc = cols + 1;
  for (CompressedFormat type : kAllTypes) {
    const size_t rows = IsKQuant(type) ? 256 : 96;
    Inputs inputs(simd_test::CaseSeed(rows, cols, 3 + static_cast<size_t>(type)));
    const auto dense = inputs.Uniform<float>(rows * cols, -2, 2);
    const auto a = inputs.Uniform<float>(m * rows, -1, 1);
    Packed p = Allocate(type, rows, cols, 0);
    PackCompressed(type, dense.data(), rows, cols, false, p.bytes.get());
    std::vector<float> dequantized(rows * cols), f32(PackedElementCount<float>(rows, cols));
    for (size_t k = 0; k < rows; ++k) {
      for (size_t n = 0; n < cols; ++n) dequantized[k * cols + n] = p.view.at(k, n);
    }
    const auto f32_view = PackMatrix(dequantized.data(), rows, cols, false, f32.data());
    std::vector<float> y(cols, -1), y_f32(cols, -1), c(m * ldc, -1), c_f32(m * ldc, -1);
    MatVecScalar(p.view, a.data(), y.data(), 1, 3);
    MatVecScalar(f32_view, a.data(), y_f32.data(), 1, 3);
    ASSERT_TRUE(simd_test::SameBits(y.data(), y_f32.data(), cols)) << CompressedFormatName(type);
    ASSERT_EQ(y[31], -1.0f);
    MatMulScalar(a.data(), rows, m, p.view, c.data(), ldc, 0, 3);
    MatMulScalar(a.data(), rows, m, f32_view, c_f32.data(), ldc, 0, 3);
    ASSERT_TRUE(simd_test::SameBits(c.data(), c_f32.data(), c.size())) << CompressedFormatName(type);
  }
}

}  // namespace
}  // namespace kvrt::simd
