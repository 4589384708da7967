// AttendQueryTile against AttendQueryTileScalar on every compiled target, within
// the bound of query_tile_attention.h, for every remainder: head widths around
// the lane counts, query counts around one and two lane groups of every lane count, key
// counts around the key tile, and prefixes split anywhere between the segments.
// Also: a query's result does not depend on the other queries of its call or on
// where the prefix splits (the kernel's per-query arithmetic).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "kvrt/simd/query_tile_attention.h"
#include "sanitizer_build.h"
#include "simd_test_support.h"
#include "tested_targets.h"

namespace kvrt::simd {
namespace {

using simd_test::GuardedBuffer;
using simd_test::Inputs;

class QueryTileAttentionTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(QueryTileAttentionTest);

template <class T>
struct Case {
  std::vector<T> q, keys, values;  // q: queries rows of q_stride; keys/values: n rows of stride
  size_t queries = 0, n = 0, head_width = 0, q_stride = 0, stride = 0;
  T scale = T(1);
};

template <class T>
Case<T> MakeCase(size_t queries, size_t n, size_t head_width, T spread) {
  Case<T> c;
  c.queries = queries;
  c.n = n;
  c.head_width = head_width;
  c.q_stride = head_width + 3;
  c.stride = head_width + 2;
  Inputs inputs(simd_test::CaseSeed(queries * 131 + n, head_width, static_cast<size_t>(spread)));
  c.q = inputs.Uniform<T>(queries * c.q_stride, -spread, spread);
  c.keys = inputs.Uniform<T>(n * c.stride, -1, 1);
  c.values = inputs.Uniform<T>(n * c.stride, -3, 3);
  c.scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(std::max<size_t>(1, head_width))));
  return c;
}

// Rows [split, n) copied to a second buffer at another stride, as the engine's
// staged rows follow its cache rows.
template <class T>
struct Split {
  Split(const Case<T>& c, size_t split) : stride2(c.head_width + 5) {
    keys.assign((c.n - split) * stride2 + 1, T(0));
    values.assign((c.n - split) * stride2 + 1, T(0));
    for (size_t p = split; p < c.n; ++p) {
      std::memcpy(&keys[(p - split) * stride2], &c.keys[p * c.stride], c.head_width * sizeof(T));
      std::memcpy(&values[(p - split) * stride2], &c.values[p * c.stride], c.head_width * sizeof(T));
    }
    first = {c.keys.data(), c.values.data(), c.stride, split};
    second = {keys.data(), values.data(), stride2, c.n - split};
  }
  size_t stride2;
  std::vector<T> keys, values;
  PrefixSegment<T> first, second;
};

// Queries [begin, begin + count) of the case through AttendQueryTile, the
// prefix cut to what the last of them sees. Returns [count, head_width].
template <class T>
std::vector<T> Attend(const Case<T>& c, size_t split, size_t begin, size_t count) {
  Split<T> parts(c, split);
  const size_t visible = c.n - (c.queries - begin - count);  // the last query's rows
  PrefixSegment<T> first = parts.first, second = parts.second;
  if (visible <= first.count) {
    first.count = visible;
    second.count = 0;
  } else {
    second.count = visible - first.count;
  }
  const size_t out_stride = c.head_width + 1;
  GuardedBuffer<T> scratch(QueryTileAttentionScratch(c.head_width), 1);
  GuardedBuffer<T> out(count * out_stride, 3);
  for (size_t i = 0; i < out.size(); ++i) out[i] = T(0);
  AttendQueryTile(c.q.data() + begin * c.q_stride, c.q_stride, count, first, second, c.head_width,
                  c.scale, scratch.data(), out.data(), out_stride);
  EXPECT_TRUE(out.GuardsIntact());
  EXPECT_TRUE(scratch.GuardsIntact());
  std::vector<T> rows(count * c.head_width);
  for (size_t r = 0; r < count; ++r) {
    for (size_t j = 0; j < c.head_width; ++j) rows[r * c.head_width + j] = out[r * out_stride + j];
  }
  return rows;
}

// The bound of query_tile_attention.h for query r, column j, in long double.
template <class T>
long double Bound(const Case<T>& c, size_t r, size_t j) {
  const long double eps = simd_test::Epsilon<T>();
  const size_t n = c.n - (c.queries - 1 - r);
  const T* q = c.q.data() + r * c.q_stride;
  long double sigma = 0, max_score = -INFINITY, min_score = INFINITY, sum = 0, v_max = 0;
  std::vector<long double> e(n);
  for (size_t p = 0; p < n; ++p) {
    long double abs_dot = 0, dot = 0;
    for (size_t i = 0; i < c.head_width; ++i) {
      const long double product = static_cast<long double>(q[i]) * c.keys[p * c.stride + i];
      abs_dot += std::fabs(product);
      dot += product;
    }
    sigma = std::max(sigma, std::fabs(static_cast<long double>(c.scale)) * (c.head_width + 2) * eps * abs_dot);
    e[p] = dot * c.scale;
    max_score = std::max(max_score, e[p]);
    min_score = std::min(min_score, e[p]);
    v_max = std::max(v_max, std::fabs(static_cast<long double>(c.values[p * c.stride + j])));
  }
  for (size_t p = 0; p < n; ++p) sum += e[p] = std::exp(e[p] - max_score);
  long double a = 0;
  for (size_t p = 0; p < n; ++p) a += e[p] / sum * std::fabs(c.values[p * c.stride + j]);
  const long double range = max_score - min_score;
  const long double tiles = std::ceil(static_cast<long double>(n) / kQueryTileKeys);
  return (4 * sigma + 4 * eps * range + (2.0L * n + 3 * tiles + 8) * eps) * a +
         (n + 2 * tiles) * v_max * simd_test::DenormMin<T>();
}

template <class T>
void ExpectMatchesTwin(const Case<T>& c, size_t split) {
  const std::vector<T> fast = Attend(c, split, 0, c.queries);
  Split<T> parts(c, split);
  std::vector<T> twin(c.queries * c.head_width);
  std::vector<T> scratch(QueryTileAttentionScratch(c.head_width));
  AttendQueryTileScalar(c.q.data(), c.q_stride, c.queries, parts.first, parts.second, c.head_width, c.scale,
                        scratch.data(), twin.data(), c.head_width);
  for (size_t r = 0; r < c.queries; ++r) {
    for (size_t j = 0; j < c.head_width; ++j) {
      ASSERT_TRUE(simd_test::WithinBound(fast[r * c.head_width + j], twin[r * c.head_width + j], Bound(c, r, j)))
          << simd_test::TypeName<T>() << " head_width=" << c.head_width << " queries=" << c.queries
          << " n=" << c.n << " split=" << split << " r=" << r << " j=" << j;
    }
  }
}

template <class T>
void ExpectMatchesTwinEverywhere(T spread) {
  // Queries around every lane count (one and two lane groups); extra committed rows
  // around the key tiles of every lane count. A sanitizer build takes a sample of the
  // grid that still reaches every head width (see CaseRunsInThisBuild).
  size_t index = 0;
  for (size_t head_width : {1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 48, 64, 65, 128}) {
    for (size_t queries : {1, 2, 3, 7, 8, 9, 15, 16, 17, 31}) {
      for (size_t extra : {0, 1, 5, 16, 17, 40}) {
        if (!sanitizer_build::CaseRunsInThisBuild(index++)) continue;
        const Case<T> c = MakeCase<T>(queries, queries + extra, head_width, spread);
        ExpectMatchesTwin(c, extra);  // committed rows, then the queries' own
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
  // Two lane groups at a time (2·16 f32 queries on AVX-512) and their tails.
  for (size_t head_width : {1, 3, 17, 48, 64}) {
    for (size_t queries : {32, 33, 47, 63, 64, 65, 130}) {
      for (size_t extra : {0, 33}) {
        if (!sanitizer_build::CaseRunsInThisBuild(index++)) continue;
        const Case<T> c = MakeCase<T>(queries, queries + extra, head_width, spread);
        ExpectMatchesTwin(c, extra);
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

// Each query alone (its own call, prefix cut to its rows) gives the same bits
// as in any group of the whole call, for any split of the prefix.
template <class T>
void ExpectQueriesIndependent() {
  for (size_t head_width : {3, 16, 17, 48, 64}) {
    for (size_t queries : {5, 9, 20, 70}) {
      const Case<T> c = MakeCase<T>(queries, queries + 19, head_width, T(4));
      const std::vector<T> all = Attend(c, 19, 0, queries);
      for (size_t split : {size_t{0}, size_t{7}, size_t{19}, c.n}) {
        for (size_t r = 0; r < queries; ++r) {
          const size_t cut = std::min(split, c.n - (queries - 1 - r));
          const std::vector<T> alone = Attend(c, cut, r, 1);
          ASSERT_TRUE(simd_test::SameBits(alone.data(), all.data() + r * head_width, head_width))
              << simd_test::TypeName<T>() << " head_width=" << head_width << " queries=" << queries
              << " split=" << split << " r=" << r;
        }
        const std::vector<T> tail = Attend(c, std::min(split, c.n), queries / 2, queries - queries / 2);
        ASSERT_TRUE(simd_test::SameBits(tail.data(), all.data() + queries / 2 * head_width,
                                        (queries - queries / 2) * head_width))
            << simd_test::TypeName<T>() << " head_width=" << head_width << " split=" << split;
      }
    }
  }
}

TEST_P(QueryTileAttentionTest, F32MatchesTwin) { ExpectMatchesTwinEverywhere<float>(1.0f); }
TEST_P(QueryTileAttentionTest, F64MatchesTwin) { ExpectMatchesTwinEverywhere<double>(1.0); }
TEST_P(QueryTileAttentionTest, F32PeakedScoresMatchTwin) { ExpectMatchesTwinEverywhere<float>(30.0f); }
TEST_P(QueryTileAttentionTest, F64PeakedScoresMatchTwin) { ExpectMatchesTwinEverywhere<double>(30.0); }
TEST_P(QueryTileAttentionTest, F32QueriesIndependent) { ExpectQueriesIndependent<float>(); }
TEST_P(QueryTileAttentionTest, F64QueriesIndependent) { ExpectQueriesIndependent<double>(); }

TEST_P(QueryTileAttentionTest, NoQueriesWritesNothing) {
  std::vector<float> q(4, 1.0f), keys(4, 1.0f), out(4, 9.0f), scratch(QueryTileAttentionScratch(4));
  AttendQueryTile(q.data(), 4, 0, {keys.data(), keys.data(), 4, 1}, {nullptr, nullptr, 0, 0}, 4, 1.0f,
                  scratch.data(), out.data(), 4);
  for (float x : out) EXPECT_EQ(x, 9.0f);
}

}  // namespace
}  // namespace kvrt::simd
