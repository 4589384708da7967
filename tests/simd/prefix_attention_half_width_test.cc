// AttendPrefix and AttendPrefixRows over 16-bit K/V rows (PrefixSegment<Half> and
// PrefixSegment<Bf16>, the f16 and bf16 KV caches) on every compiled target. The
// 16-bit kernels widen each stored element as they load it (exactly) and then run
// the f32 kernels' arithmetic, so they must give the f32 kernels' bits on the
// widened values, for every head width (every vector remainder), prefix length
// (within and across tiles), query-group shape and segment split; their scalar
// twins likewise give the f32 twin's bits. With the f32 kernels' own tests
// (prefix_attention_test.cc, prefix_attention_rows_test.cc) this holds the 16-bit
// kernels to their twin within the bound of prefix_attention.h, and every query of
// a group to the lone query's bits.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/simd/prefix_attention.h"
#include "sanitizer_build.h"
#include "simd_test_support.h"
#include "tested_targets.h"

namespace kvrt::simd {
namespace {

using simd_test::GuardedBuffer;
using simd_test::Inputs;

class PrefixAttentionHalfWidthTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(PrefixAttentionHalfWidthTest);

// An f32 rounded to the stored type (nearest, ties to even), and back (exact).
template <class K>
K Narrow(float x) {
  if constexpr (std::is_same_v<K, Half>) {
    return Half{F32ToF16(x)};
  } else {
    return Bf16{F32ToBf16(x)};
  }
}
float Widen(Half x) { return F16ToF32(x.bits); }
float Widen(Bf16 x) { return Bf16ToF32(x.bits); }

// One segment of `count` rows at `stride` in the 16-bit type K and the same values
// in f32. The 16-bit storage is exactly count·stride elements, so a read past the
// last row's end leaves the allocation (a sanitizer build reports it).
template <class K>
struct Rows {
  std::vector<K> keys16, values16;
  std::vector<float> keys32, values32;
  size_t stride = 0, count = 0;

  Rows(Inputs& inputs, size_t count_in, size_t stride_in, float value_spread)
      : stride(stride_in), count(count_in) {
    keys32 = inputs.Uniform<float>(count * stride, -1, 1);
    values32 = inputs.Uniform<float>(count * stride, -value_spread, value_spread);
    keys16 = Round(keys32);
    values16 = Round(values32);
  }
  // f32 values rounded to K in place; their K bits returned.
  static std::vector<K> Round(std::vector<float>& values) {
    std::vector<K> half(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      half[i] = Narrow<K>(values[i]);
      values[i] = Widen(half[i]);
    }
    return half;
  }
  PrefixSegment<K> Half16(size_t rows) const {
    return {keys16.data(), values16.data(), stride, std::min(rows, count)};
  }
  PrefixSegment<float> Float32(size_t rows) const {
    return {keys32.data(), values32.data(), stride, std::min(rows, count)};
  }
};

// A prefix of n rows split at `split`: the committed rows at the head width's own
// stride, the step's rows at the staging stride (K and V interleaved in the engine).
template <class K>
struct Prefix {
  Rows<K> first, second;
  size_t n;
  Prefix(Inputs& inputs, size_t n_in, size_t split, size_t head_width)
      : first(inputs, split, head_width, 3),
        second(inputs, n_in - split, 2 * head_width + 5, 2),
        n(n_in) {}
  // The first `rows` prefix rows as segments.
  PrefixSegment<K> First16(size_t rows) const { return first.Half16(rows); }
  PrefixSegment<K> Second16(size_t rows) const {
    return second.Half16(rows > first.count ? rows - first.count : 0);
  }
  PrefixSegment<float> First32(size_t rows) const { return first.Float32(rows); }
  PrefixSegment<float> Second32(size_t rows) const {
    return second.Float32(rows > first.count ? rows - first.count : 0);
  }
};

constexpr size_t kHeadWidths[] = {1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 48, 64, 65, 67, 128};

template <class K>
void ExpectOneQueryMatches() {
  size_t index = 0;  // a sanitizer build runs a sample that still reaches every head width
  for (size_t head_width : kHeadWidths) {
    for (size_t n : simd_test::ShortAndTileBoundaryLengths(kPrefixAttentionTile)) {
      for (size_t split : {size_t{0}, n / 2, n}) {
        if (!sanitizer_build::CaseRunsInThisBuild(index++)) continue;
        Inputs inputs(simd_test::CaseSeed(n, head_width, split));
        const Prefix<K> prefix(inputs, n, split, head_width);
        const std::vector<float> q = inputs.Uniform<float>(head_width, -4, 4);
        const float scale = 0.29f;
        GuardedBuffer<float> scratch(PrefixAttentionScratch(head_width, n), 1), out16(head_width, 3);
        std::vector<float> out32(head_width), scratch32(PrefixAttentionScratch(head_width, n));
        AttendPrefix(q.data(), prefix.First16(n), prefix.Second16(n), head_width, scale,
                     scratch.data(), out16.data());
        ASSERT_TRUE(out16.GuardsIntact());
        ASSERT_TRUE(scratch.GuardsIntact());
        AttendPrefix(q.data(), prefix.First32(n), prefix.Second32(n), head_width, scale,
                     scratch32.data(), out32.data());
        ASSERT_EQ(std::memcmp(out16.data(), out32.data(), head_width * sizeof(float)), 0)
            << "head_width=" << head_width << " n=" << n << " split=" << split;
        // The twins: the 16-bit twin is the f32 twin on the widened values.
        std::vector<float> twin16(head_width), twin32(head_width);
        AttendPrefixScalar(q.data(), prefix.First16(n), prefix.Second16(n), head_width, scale,
                           nullptr, twin16.data());
        AttendPrefixScalar(q.data(), prefix.First32(n), prefix.Second32(n), head_width, scale,
                           nullptr, twin32.data());
        ASSERT_EQ(std::memcmp(twin16.data(), twin32.data(), head_width * sizeof(float)), 0)
            << "twin head_width=" << head_width << " n=" << n << " split=" << split;
      }
    }
  }
}

TEST_P(PrefixAttentionHalfWidthTest, OneQueryIsTheF32KernelOnTheWidenedValues) {
  ExpectOneQueryMatches<Half>();
  if (HasFatalFailure()) return;
  ExpectOneQueryMatches<Bf16>();
}

// `rows` queries over the last rows of an n-row prefix: the f32 kernel's bits on
// the widened values, and every query the lone 16-bit query's bits.
template <class K>
void ExpectRowsMatch(size_t rows, size_t n, size_t split, size_t head_width) {
  Inputs inputs(simd_test::CaseSeed(rows * 4099 + n, split, head_width));
  const Prefix<K> prefix(inputs, n, split, head_width);
  const size_t q_stride = head_width + 3, out_stride = head_width + 1;
  const std::vector<float> q = inputs.Uniform<float>(rows * q_stride, -3, 3);
  const float scale = 0.37f;
  GuardedBuffer<float> scratch(PrefixAttentionRowsScratch(head_width, n), 1),
      out16(rows * out_stride, 2);
  std::vector<float> out32(rows * out_stride), scratch32(PrefixAttentionRowsScratch(head_width, n));
  AttendPrefixRows(q.data(), q_stride, rows, prefix.First16(n), prefix.Second16(n), head_width,
                   scale, scratch.data(), out16.data(), out_stride);
  ASSERT_TRUE(out16.GuardsIntact());
  ASSERT_TRUE(scratch.GuardsIntact());
  AttendPrefixRows(q.data(), q_stride, rows, prefix.First32(n), prefix.Second32(n), head_width,
                   scale, scratch32.data(), out32.data(), out_stride);
  std::vector<float> alone(head_width), alone_scratch(PrefixAttentionScratch(head_width, n));
  for (size_t r = 0; r < rows; ++r) {
    ASSERT_EQ(std::memcmp(out16.data() + r * out_stride, out32.data() + r * out_stride,
                          head_width * sizeof(float)),
              0)
        << "rows=" << rows << " n=" << n << " split=" << split << " head_width=" << head_width
        << " query " << r;
    const size_t count = n - (rows - 1 - r);
    AttendPrefix(q.data() + r * q_stride, prefix.First16(count), prefix.Second16(count), head_width,
                 scale, alone_scratch.data(), alone.data());
    ASSERT_EQ(std::memcmp(out16.data() + r * out_stride, alone.data(), head_width * sizeof(float)),
              0)
        << "alone rows=" << rows << " n=" << n << " split=" << split << " head_width=" << head_width
        << " query " << r;
  }
}

template <class K>
void ExpectQueryGroupsMatch() {
  const size_t t = kPrefixAttentionTile;
  for (size_t head_width : {1, 3, 16, 17, 33, 48, 64, 67, 128}) {
    for (size_t rows : {1, 2, 3, 4, 5, 8, 9}) {
      for (size_t extra : {size_t{0}, size_t{1}, size_t{6}, size_t{37}}) {
        const size_t n = rows + extra;
        for (size_t split : {size_t{0}, size_t{1}, n / 2, n})
          ExpectRowsMatch<K>(rows, n, split, head_width);
      }
    }
  }
  for (size_t head_width : {16, 64}) {
    for (size_t n : {t - 2, t + 1, t + 9, 2 * t + 2}) {
      for (size_t split : {size_t{0}, t - 1, n}) {
        if (split <= n) ExpectRowsMatch<K>(8, n, split, head_width);
      }
    }
  }
}

TEST_P(PrefixAttentionHalfWidthTest, QueryGroupsAreTheF32KernelOnTheWidenedValues) {
  ExpectQueryGroupsMatch<Half>();
  if (HasFatalFailure()) return;
  ExpectQueryGroupsMatch<Bf16>();
}

// The reference engine's rounding of f64 rows (RoundToF16) is F32ToF16's on every
// f32 value: normal, subnormal, halfway, overflow and special values, and a sweep of
// bit patterns.
TEST(RoundToF16Test, AgreesWithTheF32ConversionOnF32Values) {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1.0f,
                               -1.0f,
                               65504.0f,
                               65519.99f,
                               65520.0f,
                               -65520.0f,
                               1e6f,
                               5.9604645e-8f,
                               2.9802322e-8f,
                               2.9802326e-8f,
                               8.940697e-8f,
                               6.1035156e-5f,
                               6.1035152e-5f,
                               1.00048828125f,
                               1.00146484375f,
                               2049.0f,
                               2051.0f,
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::denorm_min()};
  for (uint32_t bits = 0; bits < 0x7F800000u; bits += 0x1F3Bu) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    values.push_back(x);
    values.push_back(-x);
  }
  for (float x : values) {
    const float expected = F16ToF32(F32ToF16(x));
    ASSERT_EQ(static_cast<float>(RoundToF16(x)), expected) << x;
    ASSERT_EQ(RoundToF16(x), static_cast<double>(expected)) << x;
  }
  EXPECT_TRUE(std::isnan(RoundToF16(std::numeric_limits<double>::quiet_NaN())));
  // f64 inputs round once: just above a halfway point goes up.
  EXPECT_EQ(RoundToF16(1.0 + 0x1p-11 + 0x1p-40), 1.0 + 0x1p-10);
  EXPECT_EQ(RoundToF16(1.0 + 0x1p-11), 1.0);  // a tie, to even
}

// RoundToBf16 likewise agrees with F32ToBf16 on every f32 value tried, including
// the subnormals and the ties next to the largest bf16 (which round to infinity).
TEST(RoundToBf16Test, AgreesWithTheF32ConversionOnF32Values) {
  const float largest = Bf16ToF32(0x7F7F);
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1.0f,
                               -1.0f,
                               largest,
                               -largest,
                               std::nextafter(largest, 0.0f),
                               3.3961776e38f,
                               3.4028235e38f,
                               1.00390625f,
                               1.01171875f,
                               1.001953125f,
                               std::numeric_limits<float>::min(),
                               std::numeric_limits<float>::denorm_min(),
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity()};
  for (uint32_t bits = 0; bits < 0x7F800000u; bits += 0x1F3Bu) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    values.push_back(x);
    values.push_back(-x);
  }
  for (float x : values) {
    const float expected = Bf16ToF32(F32ToBf16(x));
    ASSERT_EQ(RoundToBf16(x), static_cast<double>(expected)) << x;
  }
  EXPECT_TRUE(std::isnan(RoundToBf16(std::numeric_limits<double>::quiet_NaN())));
  EXPECT_EQ(RoundToBf16(1.0 + 0x1p-8 + 0x1p-40), 1.0 + 0x1p-7);  // above a halfway point: up
  EXPECT_EQ(RoundToBf16(1.0 + 0x1p-8), 1.0);                     // a tie, to even
  EXPECT_EQ(RoundToBf16(1.0 + 0x1p-7 + 0x1p-8), 1.0 + 0x1p-6);   // a tie, to even (up)
}

}  // namespace
}  // namespace kvrt::simd
