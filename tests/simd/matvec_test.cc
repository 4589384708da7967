// MatVec against MatVecScalar on every compiled target (matvec.h), and its
// independence of the panel range split.
#include <cstdint>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "kvrt/simd/matvec.h"
#include "packed_case.h"
#include "simd_test_support.h"
#include "tested_targets.h"

namespace kvrt::simd {
namespace {

using simd_test::GuardedBuffer;
using simd_test::Inputs;
using simd_test::PackedCase;

class MatVecTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(MatVecTest);

template <class T>
void ExpectMatVecMatchesTwin(int64_t target) {
  for (size_t rows : {0, 1, 2, 7, 64, 255, 256, 257, 600}) {
    for (size_t cols : {1, 15, 16, 17, 31, 32, 33, 64, 100, 129, 257}) {
      for (size_t offset : {0, 1}) {
        Inputs inputs(simd_test::CaseSeed(rows, cols, offset));
        PackedCase<T> w(rows, cols, offset, inputs);
        const auto x = inputs.Uniform<T>(rows, -1, 1);
        GuardedBuffer<T> x_buffer(rows, 3 - offset), y(cols, 2);
        x_buffer.CopyFrom(x);
        std::vector<T> twin(cols);
        MatVecScalar(w.view, x.data(), twin.data());
        MatVec(w.view, x_buffer.data(), y.data(), 0, w.view.panels());
        ASSERT_TRUE(y.GuardsIntact()) << "rows=" << rows << " cols=" << cols;
        for (size_t n = 0; n < cols; ++n) {
          // One FMA chain vs. the twin's ascending rounded products over K terms.
          const long double bound =
              simd_test::SumOfProductsBound<T>(rows, w.AbsColumnSum(x.data(), n));
          ASSERT_TRUE(simd_test::WithinBound(y[n], twin[n], bound))
              << simd_test::TypeName<T>() << " rows=" << rows << " cols=" << cols << " n=" << n;
        }
        if (target == HWY_SCALAR) {
          // No FMA on the scalar target: the same roundings in the same order.
          ASSERT_TRUE(simd_test::SameBits(y.data(), twin.data(), cols));
        }
      }
    }
  }
}

// Any split of the panels into ranges gives the same bits, and a range writes only
// its own columns.
template <class T>
void ExpectSplitInvariant() {
  const size_t rows = 300, cols = 7 * kPanelWidth<T> - 5;
  Inputs inputs(simd_test::CaseSeed(rows, cols));
  PackedCase<T> w(rows, cols, 0, inputs);
  const auto x = inputs.Uniform<T>(rows, -1, 1);
  const size_t panels = w.view.panels();
  std::vector<T> whole(cols);
  MatVec(w.view, x.data(), whole.data(), 0, panels);
  for (size_t split = 0; split <= panels; ++split) {
    std::vector<T> y(cols, T(-5));
    MatVec(w.view, x.data(), y.data(), 0, split);
    for (size_t n = split * kPanelWidth<T>; n < cols; ++n) ASSERT_EQ(y[n], T(-5)) << "n=" << n;
    MatVec(w.view, x.data(), y.data(), split, panels);
    ASSERT_TRUE(simd_test::SameBits(y.data(), whole.data(), cols)) << "split=" << split;
  }
  std::vector<T> single_panels(cols);
  for (size_t p = 0; p < panels; ++p) MatVec(w.view, x.data(), single_panels.data(), p, p + 1);
  ASSERT_TRUE(simd_test::SameBits(single_panels.data(), whole.data(), cols));
}

// A layout other than kPanelWidth (here a dense row-major matrix) is computed by the
// twin without dispatching, so these are plain tests rather than per-target ones.
template <class T>
void ExpectDenseViewUsesTwin() {
  Inputs inputs(simd_test::CaseSeed(40, 50));
  const auto dense = inputs.Uniform<T>(40 * 50, -1, 1);
  const auto x = inputs.Uniform<T>(40, -1, 1);
  const auto view = PackedMatrixView<T>::Dense(dense.data(), 40, 50);
  std::vector<T> fast(50), twin(50);
  MatVec(view, x.data(), fast.data(), 0, view.panels());
  MatVecScalar(view, x.data(), twin.data());
  ASSERT_TRUE(simd_test::SameBits(fast.data(), twin.data(), 50));
}

TEST_P(MatVecTest, F32MatchesTwin) { ExpectMatVecMatchesTwin<float>(GetParam()); }
TEST_P(MatVecTest, F64MatchesTwin) { ExpectMatVecMatchesTwin<double>(GetParam()); }
TEST_P(MatVecTest, F32SplitInvariant) { ExpectSplitInvariant<float>(); }
TEST_P(MatVecTest, F64SplitInvariant) { ExpectSplitInvariant<double>(); }
TEST(MatVecFallbackTest, F32DenseViewUsesTwin) { ExpectDenseViewUsesTwin<float>(); }
TEST(MatVecFallbackTest, F64DenseViewUsesTwin) { ExpectDenseViewUsesTwin<double>(); }

}  // namespace
}  // namespace kvrt::simd
