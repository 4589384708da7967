// StoreKvRowF16 and StoreKvRowBf16 (prefix_attention.h), the rounding of new K/V rows
// into a 16-bit cache, on every compiled target: element for element the bits of
// F32ToF16 and F32ToBf16 (their scalar twins), for every row length (each vector
// remainder) and the values where conversions part ways: ties, f16 subnormals and the
// values below them, overflow to infinity, infinities, NaNs with payloads, f32
// subnormals; and nothing written past the row.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/simd/prefix_attention.h"
#include "simd_test_support.h"
#include "tested_targets.h"

namespace kvrt::simd {
namespace {

using simd_test::Inputs;

class KvStoreTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(KvStoreTest);

float FromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// Rows of n values: random ones of every scale, every third replaced by a special.
std::vector<float> Row(size_t n, Inputs& inputs) {
  const float specials[] = {
      0.0f, -0.0f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f,  // f16 / bf16 ties
      6.0e-8f, 2.9e-8f, 3.0e-8f, -1.0e-6f, 6.1e-5f, 65504.0f, 65519.0f, 65520.0f, -7.0e4f,   // f16 range ends
      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
      FromBits(0x7FC00001u), FromBits(0xFFA00000u), FromBits(0x7F800001u),  // NaNs (one signalling)
      std::numeric_limits<float>::max(), FromBits(0x7F7FFFFFu - 0x7FFFu), 1.0e-40f, -3.0e-39f};
  std::vector<float> row = inputs.Uniform<float>(n, -4, 4);
  for (size_t i = 0; i < n; ++i) {
    if (i % 5 == 1) row[i] *= std::ldexp(1.0f, static_cast<int>(i % 41) - 20);
    if (i % 3 == 0) row[i] = specials[(i / 3 + n) % (sizeof(specials) / sizeof(specials[0]))];
  }
  return row;
}

TEST_P(KvStoreTest, RowsAreTheScalarConversionsBitForBit) {
  Inputs inputs(43);
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 70; ++n) lengths.push_back(n);
  for (size_t n : {128, 1000, 1029}) lengths.push_back(n);
  for (size_t n : lengths) {
    const std::vector<float> row = Row(n, inputs);
    std::vector<Half> f16(n + 1, Half{0xBEEF});
    std::vector<Bf16> bf16(n + 1, Bf16{0xBEEF});
    StoreKvRowF16(row.data(), n, f16.data());
    StoreKvRowBf16(row.data(), n, bf16.data());
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(f16[i].bits, F32ToF16(row[i])) << "f16 n=" << n << " i=" << i << " x=" << row[i];
      ASSERT_EQ(bf16[i].bits, F32ToBf16(row[i])) << "bf16 n=" << n << " i=" << i << " x=" << row[i];
    }
    EXPECT_EQ(f16[n].bits, 0xBEEF) << "wrote past the row, n=" << n;
    EXPECT_EQ(bf16[n].bits, 0xBEEF) << "wrote past the row, n=" << n;
  }
}

}  // namespace
}  // namespace kvrt::simd
