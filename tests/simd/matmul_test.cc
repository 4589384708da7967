// MatMul against MatMulScalar on every compiled target (matmul.h): any M, K, N,
// strided A and C, bit-identical results for any panel split, and rows equal to
// MatVec.
#include "kvrt/simd/matmul.h"

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

class MatMulTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(MatMulTest);

constexpr float kUntouched = -5.0f;

// C = A·W over all panels, checked element by element against the twin; the padding
// columns of every C row (ldc > N) must keep their value.
template <class T>
void ExpectProductMatchesTwin(int64_t target, size_t m, size_t rows, size_t cols) {
  const size_t lda = rows + 2, ldc = cols + 3;
  Inputs inputs(simd_test::CaseSeed(m, rows, cols));
  PackedCase<T> w(rows, cols, 1, inputs);
  const auto a = inputs.Uniform<T>(m * lda, -1, 1);
  GuardedBuffer<T> c(m * ldc, 1);
  for (size_t i = 0; i < m * ldc; ++i) c[i] = T(kUntouched);
  std::vector<T> twin(m * ldc, T(kUntouched));
  MatMulScalar(a.data(), lda, m, w.view, twin.data(), ldc);
  MatMul(a.data(), lda, m, w.view, c.data(), ldc, 0, w.view.panels());
  ASSERT_TRUE(c.GuardsIntact());
  for (size_t r = 0; r < m; ++r) {
    for (size_t n = 0; n < cols; ++n) {
      // One FMA chain vs. the twin's ascending rounded products over K terms.
      const long double bound =
          simd_test::SumOfProductsBound<T>(rows, w.AbsColumnSum(a.data() + r * lda, n));
      ASSERT_TRUE(simd_test::WithinBound(c[r * ldc + n], twin[r * ldc + n], bound))
          << simd_test::TypeName<T>() << " M=" << m << " K=" << rows << " N=" << cols << " at ("
          << r << ", " << n << ")";
    }
    for (size_t n = cols; n < ldc; ++n) ASSERT_EQ(c[r * ldc + n], T(kUntouched));
  }
  if (target == HWY_SCALAR) {
    // No FMA on the scalar target: the same roundings in the same order.
    ASSERT_TRUE(simd_test::SameBits(c.data(), twin.data(), m * ldc));
  }
}

template <class T>
void ExpectMatMulMatchesTwin(int64_t target) {
  for (size_t m : {1, 2, 3, 7, 8, 9, 17}) {
    for (size_t rows : {0, 1, 3, 64, 257, 513}) {
      for (size_t cols : {1, 17, 32, 33, 100}) {
        ExpectProductMatchesTwin<T>(target, m, rows, cols);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
  // More rows than one M block (128) and more depth than one K block (256).
  ExpectProductMatchesTwin<T>(target, 131, 300, 70);
}

// Splitting the panels over tasks (as the engine does over threads) changes nothing,
// and every row equals MatVec of that row: the summation order depends on K only.
template <class T>
void ExpectSplitInvariantAndEqualToMatVec() {
  const size_t m = 21, rows = 600, cols = 6 * kPanelWidth<T> + 3;
  Inputs inputs(simd_test::CaseSeed(m, rows, cols));
  PackedCase<T> w(rows, cols, 0, inputs);
  const auto a = inputs.Uniform<T>(m * rows, -1, 1);
  const size_t panels = w.view.panels();
  std::vector<T> whole(m * cols);
  MatMul(a.data(), rows, m, w.view, whole.data(), cols, 0, panels);
  for (size_t split = 0; split <= panels; ++split) {
    std::vector<T> c(m * cols);
    MatMul(a.data(), rows, m, w.view, c.data(), cols, 0, split);
    MatMul(a.data(), rows, m, w.view, c.data(), cols, split, panels);
    ASSERT_TRUE(simd_test::SameBits(c.data(), whole.data(), m * cols)) << "split=" << split;
  }
  for (size_t r = 0; r < m; ++r) {
    std::vector<T> y(cols);
    MatVec(w.view, a.data() + r * rows, y.data(), 0, panels);
    ASSERT_TRUE(simd_test::SameBits(y.data(), whole.data() + r * cols, cols)) << "row " << r;
  }
}

// A layout other than kPanelWidth (here a dense row-major matrix) is computed by the
// twin without dispatching, so these are plain tests rather than per-target ones.
template <class T>
void ExpectDenseViewUsesTwin() {
  Inputs inputs(simd_test::CaseSeed(40, 50));
  const auto dense = inputs.Uniform<T>(40 * 50, -1, 1);
  const auto a = inputs.Uniform<T>(3 * 40, -1, 1);
  const auto view = PackedMatrixView<T>::Dense(dense.data(), 40, 50);
  std::vector<T> fast(3 * 50), twin(3 * 50);
  MatMul(a.data(), 40, 3, view, fast.data(), 50, 0, view.panels());
  MatMulScalar(a.data(), 40, 3, view, twin.data(), 50);
  ASSERT_TRUE(simd_test::SameBits(fast.data(), twin.data(), fast.size()));
}

// The top `top` rows of a packed matrix (PackedMatrixView::TopRows, the visible keys
// of an attention block) multiply exactly like those rows packed on their own.
template <class T>
void ExpectTopRowsEqualRepacked() {
  for (size_t rows : {size_t{40}, size_t{100}}) {
    for (size_t top : {size_t{1}, size_t{9}, size_t{33}, rows}) {
      Inputs inputs(simd_test::CaseSeed(rows, top));
      PackedCase<T> w(rows, 70, 0, inputs);
      std::vector<T> head(w.dense.begin(), w.dense.begin() + top * 70);
      std::vector<T> repacked(PackedElementCount<T>(top, 70));
      const auto repacked_view = PackMatrix(head.data(), top, 70, false, repacked.data());
      const auto a = inputs.Uniform<T>(5 * top, -1, 1);
      std::vector<T> from_top(5 * 70), from_repacked(5 * 70);
      const PackedMatrixView<T> top_view = w.view.TopRows(top);
      MatMul(a.data(), top, 5, top_view, from_top.data(), 70, 0, top_view.panels());
      MatMul(a.data(), top, 5, repacked_view, from_repacked.data(), 70, 0, repacked_view.panels());
      ASSERT_TRUE(simd_test::SameBits(from_top.data(), from_repacked.data(), from_top.size()))
          << rows << " " << top;
      for (size_t k = 0; k < top; ++k) ASSERT_EQ(top_view.at(k, 69), w.dense[k * 70 + 69]);
    }
  }
}

TEST_P(MatMulTest, F32TopRowsEqualRepacked) { ExpectTopRowsEqualRepacked<float>(); }
TEST_P(MatMulTest, F64TopRowsEqualRepacked) { ExpectTopRowsEqualRepacked<double>(); }
TEST_P(MatMulTest, F32MatchesTwin) { ExpectMatMulMatchesTwin<float>(GetParam()); }
TEST_P(MatMulTest, F64MatchesTwin) { ExpectMatMulMatchesTwin<double>(GetParam()); }
TEST_P(MatMulTest, F32SplitInvariantAndEqualToMatVec) {
  ExpectSplitInvariantAndEqualToMatVec<float>();
}
TEST_P(MatMulTest, F64SplitInvariantAndEqualToMatVec) {
  ExpectSplitInvariantAndEqualToMatVec<double>();
}
TEST(MatMulFallbackTest, F32DenseViewUsesTwin) { ExpectDenseViewUsesTwin<float>(); }
TEST(MatMulFallbackTest, F64DenseViewUsesTwin) { ExpectDenseViewUsesTwin<double>(); }

}  // namespace
}  // namespace kvrt::simd
