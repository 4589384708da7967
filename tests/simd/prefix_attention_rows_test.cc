// AttendPrefixRows (prefix_attention.h) on every compiled target: each query of a
// run gives the bits AttendPrefix gives for it alone, for every group shape, prefix
// length (within one tile and across tiles), head width and segment split.
// The batch-invariant engine relies on it: a prompt's prefill and its decode steps
// attend in the same arithmetic.
#include <cstring>
#include <type_traits>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "kvrt/simd/prefix_attention.h"
#include "simd_test_support.h"
#include "tested_targets.h"

namespace kvrt::simd {
namespace {

using simd_test::GuardedBuffer;
using simd_test::Inputs;

class PrefixAttentionRowsTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(PrefixAttentionRowsTest);

// `rows` queries over a prefix of n rows, split between two segments at `split`
// (the second segment at its own stride, as the engine's staged rows are).
template <class T>
struct RowsCase {
  size_t rows, n, split, head_width;
  size_t q_stride, out_stride, stride1, stride2;
  std::vector<T> q, keys1, values1, keys2, values2;
  T scale;

  RowsCase(size_t rows_in, size_t n_in, size_t split_in, size_t head_width_in)
      : rows(rows_in), n(n_in), split(split_in), head_width(head_width_in),
        q_stride(head_width_in + 3), out_stride(head_width_in + 1), stride1(head_width_in + 2),
        stride2(2 * head_width_in + 5), scale(T(0.37)) {
    Inputs inputs(simd_test::CaseSeed(rows * 4099 + n, split, head_width));
    q = inputs.Uniform<T>(rows * q_stride, -3, 3);
    keys1 = inputs.Uniform<T>(split * stride1 + 1, -1, 1);
    values1 = inputs.Uniform<T>(split * stride1 + 1, -2, 2);
    keys2 = inputs.Uniform<T>((n - split) * stride2 + 1, -1, 1);
    values2 = inputs.Uniform<T>((n - split) * stride2 + 1, -2, 2);
  }
  PrefixSegment<T> First(size_t count) const {
    return {keys1.data(), values1.data(), stride1, std::min(split, count)};
  }
  PrefixSegment<T> Second(size_t count) const {
    return {keys2.data(), values2.data(), stride2, count > split ? count - split : 0};
  }
};

template <class T>
void ExpectEveryQueryMatchesAttendPrefix(const RowsCase<T>& c) {
  GuardedBuffer<T> scratch(PrefixAttentionRowsScratch(c.head_width, c.n), 1);
  GuardedBuffer<T> out(c.rows * c.out_stride, 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = T(-7);  // the gaps between rows stay
  AttendPrefixRows(c.q.data(), c.q_stride, c.rows, c.First(c.n), c.Second(c.n), c.head_width,
                   c.scale, scratch.data(), out.data(), c.out_stride);
  ASSERT_TRUE(out.GuardsIntact());
  ASSERT_TRUE(scratch.GuardsIntact());
  std::vector<T> alone(c.head_width), alone_scratch(PrefixAttentionScratch(c.head_width, c.n));
  for (size_t r = 0; r < c.rows; ++r) {
    const size_t count = c.n - (c.rows - 1 - r);
    AttendPrefix(c.q.data() + r * c.q_stride, c.First(count), c.Second(count), c.head_width, c.scale,
                 alone_scratch.data(), alone.data());
    ASSERT_EQ(std::memcmp(out.data() + r * c.out_stride, alone.data(), c.head_width * sizeof(T)), 0)
        << simd_test::TypeName<T>() << " rows=" << c.rows << " n=" << c.n << " split=" << c.split
        << " head_width=" << c.head_width << " query " << r;
    for (size_t j = c.head_width; j < c.out_stride && r + 1 < c.rows; ++j) {
      ASSERT_EQ(out[r * c.out_stride + j], T(-7)) << "wrote between rows";
    }
  }
}

template <class T>
void ExpectRowsMatchAttendPrefix() {
  const size_t t = kPrefixAttentionTile;
  for (size_t head_width : {1, 3, 16, 17, 33, 48, 64, 67, 128}) {
    for (size_t rows : {1, 2, 3, 4, 5, 8, 9}) {
      for (size_t extra : {size_t{0}, size_t{1}, size_t{6}, size_t{37}}) {
        const size_t n = rows + extra;
        for (size_t split : {size_t{0}, size_t{1}, n / 2, n - 1, n}) {
          ExpectEveryQueryMatchesAttendPrefix(RowsCase<T>(rows, n, split, head_width));
        }
      }
    }
  }
  // Around the tiles: groups whose queries see one tile, more than one (walked in
  // the lone query's tiles), or some one and some two; segments split inside, at
  // and around a tile boundary.
  for (size_t head_width : {16, 64}) {
    for (size_t n : {t - 2, t, t + 1, t + 3, t + 9, 2 * t - 1, 2 * t + 2}) {
      for (size_t split : {size_t{0}, n / 3, t - 1, t + 1, n}) {
        if (split > n) continue;
        ExpectEveryQueryMatchesAttendPrefix(RowsCase<T>(8, n, split, head_width));
      }
    }
    ExpectEveryQueryMatchesAttendPrefix(RowsCase<T>(9, 2 * t + 2, t, head_width));
  }
  // Blocks of many groups walking the prefix together (PrefixAttentionGroupsAtOnce):
  // a whole engine block and its remainders over one and three tiles, and a prefix
  // long enough that only a few groups fit the scratch budget at once, so the block
  // is walked in several batches of groups. (f32 only: the walk is the same code for
  // f64, which the shapes above already run, and these cases are long under ASan.)
  if constexpr (std::is_same_v<T, float>) {
    for (size_t rows : {size_t{kPrefixAttentionBlockRows}, size_t{37}, size_t{70}}) {
      for (size_t n : {rows + 5, 3 * t - 7}) {
        ExpectEveryQueryMatchesAttendPrefix(RowsCase<T>(rows, n, n / 2, 64));
      }
    }
    const size_t long_prefix = 7 * t + 3, rows = 33;  // eight groups and one query alone
    ASSERT_GT(PrefixAttentionGroupsAtOnce(64, long_prefix), 1u);
    ASSERT_LT(PrefixAttentionGroupsAtOnce(64, long_prefix), rows / kPrefixAttentionRows);
    ExpectEveryQueryMatchesAttendPrefix(RowsCase<T>(rows, long_prefix, long_prefix - 40, 64));
  }
}

TEST_P(PrefixAttentionRowsTest, F32EveryQueryMatchesAttendPrefix) { ExpectRowsMatchAttendPrefix<float>(); }
TEST_P(PrefixAttentionRowsTest, F64EveryQueryMatchesAttendPrefix) { ExpectRowsMatchAttendPrefix<double>(); }

}  // namespace
}  // namespace kvrt::simd
