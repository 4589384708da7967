// PackMatrix round trips (pack_matrix.h): no dispatch, so plain tests.
#include <vector>

#include "gtest/gtest.h"
#include "kvrt/simd/pack_matrix.h"
#include "simd_test_support.h"

namespace kvrt::simd {
namespace {

using simd_test::Inputs;

// Element (k, n) of the packed view equals the source element converted to Out, and
// the padding of the last panel is zero.
template <class Out, class In>
void ExpectRoundTrip(bool transposed) {
  for (size_t rows : {0, 1, 5, 33, 257}) {
    for (size_t cols : {0, 1, 15, 16, 17, 31, 32, 33, 65, 100}) {
      Inputs inputs(simd_test::CaseSeed(rows, cols, transposed));
      const auto source = inputs.WideExponents<In>(rows * cols, 1, 30);
      std::vector<Out> packed(PackedElementCount<Out>(rows, cols), Out(-1));
      const PackedMatrixView<Out> view =
          PackMatrix(source.data(), rows, cols, transposed, packed.data());
      ASSERT_EQ(view.data, packed.data());
      ASSERT_EQ(view.rows, rows);
      ASSERT_EQ(view.cols, cols);
      ASSERT_EQ(view.panel_width, kPanelWidth<Out>);
      ASSERT_EQ(packed.size(), view.panels() * rows * kPanelWidth<Out>);
      for (size_t k = 0; k < rows; ++k) {
        for (size_t n = 0; n < cols; ++n) {
          const In element = transposed ? source[n * rows + k] : source[k * cols + n];
          ASSERT_EQ(view.at(k, n), static_cast<Out>(element)) << "k=" << k << " n=" << n;
        }
        for (size_t n = cols; n < view.panels() * kPanelWidth<Out>; ++n) {
          ASSERT_EQ(view.at(k, n), Out(0)) << "padding k=" << k << " n=" << n;
        }
      }
    }
  }
}

TEST(PackMatrixTest, PanelWidthsAreTwoAvx512Vectors) {
  EXPECT_EQ(kPanelWidth<float>, 32u);
  EXPECT_EQ(kPanelWidth<double>, 16u);
  EXPECT_EQ(PackedElementCount<float>(3, 33), 2u * 3u * 32u);
  EXPECT_EQ(PackedElementCount<double>(3, 16), 3u * 16u);
}
TEST(PackMatrixTest, FloatFromFloat) {
  ExpectRoundTrip<float, float>(false);
  ExpectRoundTrip<float, float>(true);
}
TEST(PackMatrixTest, FloatFromDoubleRoundsToNearest) {
  ExpectRoundTrip<float, double>(false);
  ExpectRoundTrip<float, double>(true);
}
TEST(PackMatrixTest, DoubleFromFloat) {
  ExpectRoundTrip<double, float>(false);
  ExpectRoundTrip<double, float>(true);
}
TEST(PackMatrixTest, DoubleFromDouble) {
  ExpectRoundTrip<double, double>(false);
  ExpectRoundTrip<double, double>(true);
}

}  // namespace
}  // namespace kvrt::simd
