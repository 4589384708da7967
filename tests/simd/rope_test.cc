// RopeRotate against RopeRotateScalar on every compiled target (rope.h): the fast
// kernel performs the twin's roundings (no FMA), so results must be bit-identical.
#include <cmath>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "kvrt/simd/rope.h"
#include "simd_test_support.h"
#include "tested_targets.h"

namespace kvrt::simd {
namespace {

using simd_test::GuardedBuffer;
using simd_test::Inputs;

class RopeTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(RopeTest);

// The tables of one position, as the runtime precomputes them.
template <class T>
void RopeTables(size_t pairs, size_t position, std::vector<T>& cos, std::vector<T>& sin) {
  cos.resize(pairs);
  sin.resize(pairs);
  for (size_t i = 0; i < pairs; ++i) {
    const double angle = position * std::pow(10000.0, -2.0 * i / (2.0 * pairs));
    cos[i] = static_cast<T>(std::cos(angle));
    sin[i] = static_cast<T>(std::sin(angle));
  }
}

enum class RopeInputs { kUniform, kLarge, kSubnormal };

template <class T>
void ExpectRopeBitIdentical(RopeInputs kind) {
  const bool is_float = sizeof(T) == 4;
  std::vector<size_t> pair_counts;
  for (size_t pairs = 0; pairs <= 150; ++pairs) pair_counts.push_back(pairs);
  pair_counts.push_back(300);  // more than one 128-pair table chunk
  for (size_t pairs : pair_counts) {
    for (size_t heads : {1, 3, 12}) {
      for (size_t offset : simd_test::kMisalignments) {
        Inputs inputs(simd_test::CaseSeed(pairs, heads, offset));
        const size_t n = 2 * pairs * heads;
        std::vector<T> v;
        switch (kind) {
          case RopeInputs::kUniform:
            v = inputs.Uniform<T>(n, -4, 4);
            break;
          case RopeInputs::kLarge:
            v = inputs.WideExponents<T>(n, is_float ? T(1e30) : T(1e200), 16);
            break;
          case RopeInputs::kSubnormal:
            v = inputs.WideExponents<T>(n, std::numeric_limits<T>::min(), 8);
            break;
        }
        std::vector<T> cos, sin;
        RopeTables<T>(pairs, 7 + pairs, cos, sin);
        GuardedBuffer<T> fast(n, offset);
        fast.CopyFrom(v);
        std::vector<T> twin = v;
        RopeRotateScalar(twin.data(), cos.data(), sin.data(), pairs, heads);
        RopeRotate(fast.data(), cos.data(), sin.data(), pairs, heads);
        ASSERT_TRUE(fast.GuardsIntact()) << "pairs=" << pairs << " heads=" << heads;
        ASSERT_TRUE(simd_test::SameBits(fast.data(), twin.data(), n))
            << simd_test::TypeName<T>() << " pairs=" << pairs << " heads=" << heads
            << " offset=" << offset;
      }
    }
  }
}

TEST_P(RopeTest, F32UniformBitIdentical) { ExpectRopeBitIdentical<float>(RopeInputs::kUniform); }
TEST_P(RopeTest, F64UniformBitIdentical) { ExpectRopeBitIdentical<double>(RopeInputs::kUniform); }
TEST_P(RopeTest, F32LargeBitIdentical) { ExpectRopeBitIdentical<float>(RopeInputs::kLarge); }
TEST_P(RopeTest, F64LargeBitIdentical) { ExpectRopeBitIdentical<double>(RopeInputs::kLarge); }
TEST_P(RopeTest, F32SubnormalBitIdentical) { ExpectRopeBitIdentical<float>(RopeInputs::kSubnormal); }
TEST_P(RopeTest, F64SubnormalBitIdentical) {
  ExpectRopeBitIdentical<double>(RopeInputs::kSubnormal);
}

}  // namespace
}  // namespace kvrt::simd
