// AttendPrefix and AttendPrefixRows over q8_0 K/V rows (PrefixSegment<Q8>, the
// q8_0 KV cache) on every compiled target, and the two row quantizers. The q8_0
// kernels load each element as quant·scale, which f32 holds exactly, and then run
// the f32 kernels' arithmetic, so they must give the f32 kernels' bits on the
// dequantized values for every head width (every vector and block remainder),
// prefix length (within and across tiles), query-group shape and segment split;
// their scalar twins likewise give the f32 twin's bits. With the f32 kernels' own
// tests this holds the q8_0 kernels to their twin within the bound of
// prefix_attention.h.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/simd/prefix_attention.h"
#include "sanitizer_build.h"
#include "simd_test_support.h"
#include "tested_targets.h"

namespace kvrt::simd {
namespace {

using simd_test::Inputs;

class PrefixAttentionQ8Test : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(PrefixAttentionQ8Test);

// One segment of `count` rows `stride` quants apart (a multiple of the block, as in
// the cache and the engine's staging), quantized by QuantizeKvRowQ8_0, and the same
// rows dequantized to f32. The quants are exactly count·stride elements, so a read
// past the last row leaves the allocation (a sanitizer build reports it).
struct Rows {
  std::vector<Q8> key_quants, value_quants;
  std::vector<Half> key_scales, value_scales;
  std::vector<float> keys32, values32;
  size_t stride = 0, count = 0;

  Rows(Inputs& inputs, size_t count_in, size_t stride_in, size_t head_width, float value_spread)
      : stride(stride_in), count(count_in) {
    keys32 = Quantize(inputs.Uniform<float>(count * stride, -1, 1), head_width, key_quants, key_scales);
    values32 = Quantize(inputs.Uniform<float>(count * stride, -value_spread, value_spread), head_width,
                        value_quants, value_scales);
  }
  // Each row's first head_width values quantized; the rows dequantized returned.
  std::vector<float> Quantize(const std::vector<float>& values, size_t head_width, std::vector<Q8>& quants,
                              std::vector<Half>& scales) const {
    quants.assign(count * stride, Q8{0});
    scales.assign(count * stride / kQ8KvBlock, Half{0});
    std::vector<float> dequantized(count * stride, 0.0f);
    for (size_t p = 0; p < count; ++p) {
      QuantizeKvRowQ8_0(values.data() + p * stride, head_width, quants.data() + p * stride,
                        scales.data() + p * stride / kQ8KvBlock);
      for (size_t j = 0; j < head_width; ++j) {
        const size_t i = p * stride + j;
        dequantized[i] = F16ToF32(scales[i / kQ8KvBlock].bits) * static_cast<float>(quants[i].quant);
      }
    }
    return dequantized;
  }
  PrefixSegment<Q8> Quantized(size_t rows) const {
    return {{key_quants.data(), key_quants.data(), key_scales.data()},
            {value_quants.data(), value_quants.data(), value_scales.data()},
            stride,
            std::min(rows, count)};
  }
  PrefixSegment<float> Float32(size_t rows) const {
    return {keys32.data(), values32.data(), stride, std::min(rows, count)};
  }
};

// A prefix of n rows split at `split`: the committed rows at the row's own stride,
// the step's rows at a wider one (K and V of every head interleaved in staging).
struct Prefix {
  Rows first, second;
  Prefix(Inputs& inputs, size_t n, size_t split, size_t head_width)
      : first(inputs, split, Q8KvRowQuants(head_width), head_width, 3),
        second(inputs, n - split, 3 * Q8KvRowQuants(head_width), head_width, 2) {}
  // The first `rows` prefix rows: how many of them each segment holds.
  size_t InFirst(size_t rows) const { return std::min(rows, first.count); }
  size_t InSecond(size_t rows) const { return rows - InFirst(rows); }
  PrefixSegment<Q8> FirstQ8(size_t rows) const { return first.Quantized(InFirst(rows)); }
  PrefixSegment<Q8> SecondQ8(size_t rows) const { return second.Quantized(InSecond(rows)); }
  PrefixSegment<float> First32(size_t rows) const { return first.Float32(InFirst(rows)); }
  PrefixSegment<float> Second32(size_t rows) const { return second.Float32(InSecond(rows)); }
};

constexpr size_t kHeadWidths[] = {1, 2, 3, 6, 8, 15, 16, 17, 31, 32, 33, 48, 64, 65, 96, 128};

TEST_P(PrefixAttentionQ8Test, OneQueryIsTheF32KernelOnTheDequantizedValues) {
  size_t index = 0;  // a sanitizer build runs a sample that still reaches every head width
  for (size_t head_width : kHeadWidths) {
    for (size_t n : simd_test::ShortAndTileBoundaryLengths(kPrefixAttentionTile)) {
      for (size_t split : {size_t{0}, n / 2, n}) {
        if (!sanitizer_build::CaseRunsInThisBuild(index++)) continue;
        Inputs inputs(simd_test::CaseSeed(n, head_width, split + 77));
        const Prefix prefix(inputs, n, split, head_width);
        const std::vector<float> q = inputs.Uniform<float>(head_width, -4, 4);
        const float scale = 0.29f;
        std::vector<float> scratch(PrefixAttentionScratch(head_width, n)), out8(head_width), out32(head_width);
        AttendPrefix(q.data(), prefix.FirstQ8(n), prefix.SecondQ8(n), head_width, scale, scratch.data(),
                     out8.data());
        AttendPrefix(q.data(), prefix.First32(n), prefix.Second32(n), head_width, scale, scratch.data(),
                     out32.data());
        ASSERT_EQ(std::memcmp(out8.data(), out32.data(), head_width * sizeof(float)), 0)
            << "head_width=" << head_width << " n=" << n << " split=" << split;
        std::vector<float> twin8(head_width), twin32(head_width);
        AttendPrefixScalar(q.data(), prefix.FirstQ8(n), prefix.SecondQ8(n), head_width, scale, nullptr,
                           twin8.data());
        AttendPrefixScalar(q.data(), prefix.First32(n), prefix.Second32(n), head_width, scale, nullptr,
                           twin32.data());
        ASSERT_EQ(std::memcmp(twin8.data(), twin32.data(), head_width * sizeof(float)), 0)
            << "twin head_width=" << head_width << " n=" << n << " split=" << split;
      }
    }
  }
}

// `rows` queries over the last rows of an n-row prefix: the f32 kernel's bits on
// the dequantized values, and every query the lone q8_0 query's bits.
void ExpectRowsMatch(size_t rows, size_t n, size_t split, size_t head_width) {
  Inputs inputs(simd_test::CaseSeed(rows * 4099 + n, split + 5, head_width));
  const Prefix prefix(inputs, n, split, head_width);
  const size_t q_stride = head_width + 3, out_stride = head_width + 1;
  const std::vector<float> q = inputs.Uniform<float>(rows * q_stride, -3, 3);
  const float scale = 0.37f;
  std::vector<float> scratch(PrefixAttentionRowsScratch(head_width, n)), out8(rows * out_stride),
      out32(rows * out_stride);
  AttendPrefixRows(q.data(), q_stride, rows, prefix.FirstQ8(n), prefix.SecondQ8(n), head_width, scale,
                   scratch.data(), out8.data(), out_stride);
  AttendPrefixRows(q.data(), q_stride, rows, prefix.First32(n), prefix.Second32(n), head_width, scale,
                   scratch.data(), out32.data(), out_stride);
  std::vector<float> alone(head_width), alone_scratch(PrefixAttentionScratch(head_width, n));
  for (size_t r = 0; r < rows; ++r) {
    ASSERT_EQ(std::memcmp(out8.data() + r * out_stride, out32.data() + r * out_stride, head_width * sizeof(float)),
              0)
        << "rows=" << rows << " n=" << n << " split=" << split << " head_width=" << head_width << " query " << r;
    const size_t count = n - (rows - 1 - r);
    AttendPrefix(q.data() + r * q_stride, prefix.FirstQ8(count), prefix.SecondQ8(count), head_width, scale,
                 alone_scratch.data(), alone.data());
    ASSERT_EQ(std::memcmp(out8.data() + r * out_stride, alone.data(), head_width * sizeof(float)), 0)
        << "alone rows=" << rows << " n=" << n << " split=" << split << " head_width=" << head_width
        << " query " << r;
  }
}

TEST_P(PrefixAttentionQ8Test, QueryGroupsAreTheF32KernelOnTheDequantizedValues) {
  const size_t t = kPrefixAttentionTile;
  for (size_t head_width : {1, 6, 16, 17, 33, 48, 64, 67, 128}) {
    for (size_t rows : {1, 2, 3, 4, 5, 8, 9}) {
      for (size_t extra : {size_t{0}, size_t{1}, size_t{6}, size_t{37}}) {
        const size_t n = rows + extra;
        for (size_t split : {size_t{0}, size_t{1}, n / 2, n}) {
          ExpectRowsMatch(rows, n, split, head_width);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
  for (size_t head_width : {16, 64}) {
    for (size_t n : {t - 2, t + 1, 2 * t + 2}) {
      for (size_t split : {size_t{0}, t - 1, n}) {
        if (split <= n) ExpectRowsMatch(8, n, split, head_width);
      }
    }
  }
}

// QuantizeKvRowQ8_0 is ggml's block quantizer block by block; a head width short of
// a whole block is quantized zero-padded, its padding quants zero.
TEST(QuantizeKvRowQ8_0Test, IsGgmlsBlockQuantizerBlockByBlock) {
  Inputs inputs(2027);
  for (size_t head_width : {1, 6, 31, 32, 33, 64, 100, 128}) {
    std::vector<float> row = inputs.Uniform<float>(head_width, -5, 5);
    if (head_width > 3) row[2] = 0.0f;
    std::vector<Q8> quants(Q8KvRowQuants(head_width), Q8{99});
    std::vector<Half> scales(Q8KvRowQuants(head_width) / kQ8KvBlock);
    QuantizeKvRowQ8_0(row.data(), head_width, quants.data(), scales.data());
    for (size_t b = 0; b < scales.size(); ++b) {
      float block[kQ8KvBlock] = {};
      for (size_t j = 0; j < kQ8KvBlock && b * kQ8KvBlock + j < head_width; ++j) block[j] = row[b * kQ8KvBlock + j];
      uint8_t ggml[2 + kQ8KvBlock];
      QuantizeBlockQ8_0(block, ggml);
      EXPECT_EQ(scales[b].bits, ggml[0] | ggml[1] << 8) << head_width;
      for (size_t j = 0; j < kQ8KvBlock; ++j) {
        EXPECT_EQ(quants[b * kQ8KvBlock + j].quant, static_cast<int8_t>(ggml[2 + j])) << head_width << " " << j;
        if (b * kQ8KvBlock + j >= head_width) {
          EXPECT_EQ(quants[b * kQ8KvBlock + j].quant, 0);
        }
      }
    }
  }
}

TEST(QuantizeKvRowQ8_0Test, ANonFiniteValueMakesItsBlocksScaleNonFinite) {
  std::vector<float> row(64, 1.0f);
  row[40] = std::numeric_limits<float>::infinity();
  std::vector<Q8> quants(64);
  std::vector<Half> scales(2);
  QuantizeKvRowQ8_0(row.data(), 64, quants.data(), scales.data());
  EXPECT_TRUE(std::isfinite(F16ToF32(scales[0].bits)));
  EXPECT_FALSE(std::isfinite(F16ToF32(scales[1].bits)));
  // A finite block too large for an f16 scale (amax/127 > 65504) overflows it.
  std::vector<float> huge(32, 1e7f);
  QuantizeKvRowQ8_0(huge.data(), 32, quants.data(), scales.data());
  EXPECT_TRUE(std::isinf(F16ToF32(scales[0].bits)));
}

// The reference engine's rounding of f64 rows is the same formula in f64: on f32
// inputs it lands on the f32 quantizer's value but where x/d sits within rounding
// of a half-integer (a quant one step apart), and never farther.
TEST(RoundKvRowToQ8_0Test, AgreesWithTheF32QuantizerButAtTies) {
  Inputs inputs(4242);
  size_t elements = 0, differ = 0;
  for (size_t head_width : {6, 32, 48, 64, 128}) {
    for (size_t trial = 0; trial < 200; ++trial) {
      const std::vector<float> row = inputs.Uniform<float>(head_width, -3, 3);
      std::vector<Q8> quants(Q8KvRowQuants(head_width));
      std::vector<Half> scales(Q8KvRowQuants(head_width) / kQ8KvBlock);
      QuantizeKvRowQ8_0(row.data(), head_width, quants.data(), scales.data());
      const std::vector<double> wide(row.begin(), row.end());
      std::vector<double> rounded(head_width);
      RoundKvRowToQ8_0(wide.data(), head_width, rounded.data());
      for (size_t j = 0; j < head_width; ++j) {
        const double step = F16ToF32(scales[j / kQ8KvBlock].bits);
        const double fast = step * quants[j].quant;
        ++elements;
        if (rounded[j] != fast) {
          ++differ;
          ASSERT_LE(std::fabs(rounded[j] - fast), step * (1 + 0x1p-9)) << head_width << " " << j;
        }
        ASSERT_LE(std::fabs(rounded[j] - row[j]), 0.5 * step * (1 + 0x1p-9) + 0.5 * step) << head_width;
      }
    }
  }
  EXPECT_LE(differ * 100, elements) << differ << " of " << elements;
}

}  // namespace
}  // namespace kvrt::simd
