// AttendPrefix against AttendPrefixScalar on every compiled target
// (prefix_attention.h), and the invariances the batching engine relies on: the
// result does not depend on where the prefix splits into its two segments.
#include <cmath>
#include <cstring>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "kvrt/simd/dot.h"
#include "kvrt/simd/prefix_attention.h"
#include "simd_test_support.h"
#include "tested_targets.h"

namespace kvrt::simd {
namespace {

using simd_test::GuardedBuffer;
using simd_test::Inputs;

class PrefixAttentionTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(PrefixAttentionTest);

// Prefix lengths around every tile boundary and short remainders.
std::vector<size_t> Lengths() {
  std::vector<size_t> lengths;
  for (size_t n = 1; n <= 40; ++n) lengths.push_back(n);
  const size_t t = kPrefixAttentionTile;
  for (size_t n : {t - 1, t, t + 1, t + 17, 2 * t, 2 * t + 3, 3 * t + 50}) lengths.push_back(n);
  return lengths;
}

template <class T>
struct Case {
  std::vector<T> q, keys, values;  // keys/values: n rows of `stride`
  size_t n = 0, head_width = 0, stride = 0;
  T scale = T(1);
};

template <class T>
Case<T> MakeCase(size_t n, size_t head_width, T spread) {
  Case<T> c;
  c.n = n;
  c.head_width = head_width;
  c.stride = head_width + 2;
  Inputs inputs(simd_test::CaseSeed(n, head_width, static_cast<size_t>(spread)));
  c.q = inputs.Uniform<T>(head_width, -spread, spread);
  c.keys = inputs.Uniform<T>(n * c.stride, -1, 1);
  c.values = inputs.Uniform<T>(n * c.stride, -3, 3);
  c.scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(std::max<size_t>(1, head_width))));
  return c;
}

// The prefix split at `split`: [0, split) from the first copy, the rest from a
// second copy of the rows at another address and stride.
template <class T>
std::vector<T> Attend(const Case<T>& c, size_t split, std::vector<T>& copy_keys,
                      std::vector<T>& copy_values) {
  const size_t stride2 = c.head_width + 5;
  copy_keys.assign((c.n - split) * stride2 + 1, T(0));
  copy_values.assign((c.n - split) * stride2 + 1, T(0));
  for (size_t p = split; p < c.n; ++p) {
    std::memcpy(&copy_keys[(p - split) * stride2], &c.keys[p * c.stride], c.head_width * sizeof(T));
    std::memcpy(&copy_values[(p - split) * stride2], &c.values[p * c.stride],
                c.head_width * sizeof(T));
  }
  PrefixSegment<T> first{c.keys.data(), c.values.data(), c.stride, split};
  PrefixSegment<T> second{copy_keys.data(), copy_values.data(), stride2, c.n - split};
  GuardedBuffer<T> scratch(PrefixAttentionScratch(c.head_width, c.n), 1), out(c.head_width, 3);
  AttendPrefix(c.q.data(), first, second, c.head_width, c.scale, scratch.data(), out.data());
  EXPECT_TRUE(out.GuardsIntact());
  EXPECT_TRUE(scratch.GuardsIntact());
  return out.ToVector();
}

template <class T>
void ExpectMatchesTwin(T spread) {
  const long double eps = simd_test::Epsilon<T>();
  for (size_t head_width : {1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 48, 64, 65, 67, 128}) {
    for (size_t n : Lengths()) {
      const Case<T> c = MakeCase<T>(n, head_width, spread);
      std::vector<T> k2, v2;
      const std::vector<T> fast = Attend(c, n, k2, v2);
      std::vector<T> twin(head_width);
      std::vector<T> scratch(PrefixAttentionScratch(head_width, n));
      AttendPrefixScalar(c.q.data(), {c.keys.data(), c.values.data(), c.stride, n},
                         {nullptr, nullptr, 0, 0}, head_width, c.scale, scratch.data(),
                         twin.data());
      // The bound of prefix_attention.h, computed from this case in long double.
      long double sigma = 0;
      std::vector<long double> e(n);
      long double max_score = -INFINITY, sum = 0;
      for (size_t p = 0; p < n; ++p) {
        long double abs_dot = 0, dot = 0;
        for (size_t i = 0; i < head_width; ++i) {
          abs_dot += std::fabs(static_cast<long double>(c.q[i]) * c.keys[p * c.stride + i]);
          dot += static_cast<long double>(c.q[i]) * c.keys[p * c.stride + i];
        }
        sigma = std::max(sigma, std::fabs(static_cast<long double>(c.scale)) *
                                    (head_width + 2) * eps * abs_dot);
        e[p] = dot * c.scale;
        max_score = std::max(max_score, e[p]);
      }
      for (size_t p = 0; p < n; ++p) sum += e[p] = std::exp(e[p] - max_score);
      for (size_t j = 0; j < head_width; ++j) {
        long double a = 0;
        for (size_t p = 0; p < n; ++p) a += e[p] / sum * std::fabs(c.values[p * c.stride + j]);
        const long double bound = (4 * sigma + (2.0L * n + 8) * eps) * a + n * simd_test::DenormMin<T>();
        ASSERT_TRUE(simd_test::WithinBound(fast[j], twin[j], bound))
            << simd_test::TypeName<T>() << " head_width=" << head_width << " n=" << n
            << " j=" << j;
      }
    }
  }
}

// Every split of the prefix between the segments gives the same bits.
template <class T>
void ExpectSplitInvariant() {
  for (size_t head_width : {3, 16, 48, 64}) {
    const size_t t = kPrefixAttentionTile;
    for (size_t n : {size_t{1}, size_t{2}, size_t{5}, size_t{31}, t - 1, t, t + 1, 2 * t + 5}) {
      const Case<T> c = MakeCase<T>(n, head_width, T(4));
      std::vector<T> k2, v2;
      const std::vector<T> whole = Attend(c, n, k2, v2);
      for (size_t split : {size_t{0}, size_t{1}, n / 2, n - 1, n}) {
        if (split > n) continue;
        const std::vector<T> parts = Attend(c, split, k2, v2);
        ASSERT_EQ(std::memcmp(parts.data(), whole.data(), head_width * sizeof(T)), 0)
            << simd_test::TypeName<T>() << " head_width=" << head_width << " n=" << n
            << " split=" << split;
      }
    }
  }
}

TEST_P(PrefixAttentionTest, F32MatchesTwin) { ExpectMatchesTwin<float>(1.0f); }
TEST_P(PrefixAttentionTest, F64MatchesTwin) { ExpectMatchesTwin<double>(1.0); }
TEST_P(PrefixAttentionTest, F32PeakedScoresMatchTwin) { ExpectMatchesTwin<float>(30.0f); }
TEST_P(PrefixAttentionTest, F64PeakedScoresMatchTwin) { ExpectMatchesTwin<double>(30.0); }
TEST_P(PrefixAttentionTest, F32SplitInvariant) { ExpectSplitInvariant<float>(); }
TEST_P(PrefixAttentionTest, F64SplitInvariant) { ExpectSplitInvariant<double>(); }

TEST_P(PrefixAttentionTest, EmptyPrefixGivesZeros) {
  std::vector<float> q(4, 1.0f), out(4, 9.0f), scratch(PrefixAttentionScratch(4, 0));
  AttendPrefix(q.data(), PrefixSegment<float>{nullptr, nullptr, 0, 0}, PrefixSegment<float>{nullptr, nullptr, 0, 0}, 4, 1.0f,
               scratch.data(), out.data());
  for (float x : out) EXPECT_EQ(x, 0.0f);
}

}  // namespace
}  // namespace kvrt::simd

