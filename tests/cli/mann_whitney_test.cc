// The Mann–Whitney U test of `kvrt bench-compare` against values worked out by
// hand: the exact distribution of U for small samples without ties, the normal
// approximation with the tie correction otherwise.
#include "mann_whitney.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace kvrt::cli {
namespace {

TEST(MannWhitneyTest, SeparatedSamplesGiveTheExtremeExactP) {
  // 3 against 3, every value of a below b: U = 0, and only 1 of the C(6, 3) = 20
  // arrangements is as extreme on each side: p = 2/20.
  const std::vector<double> low = {1, 2, 3}, high = {4, 5, 6};
  const auto below = MannWhitneyTest(low, high);
  ASSERT_TRUE(below.has_value());
  EXPECT_TRUE(below->exact);
  EXPECT_EQ(below->u, 0);
  EXPECT_DOUBLE_EQ(below->p_value, 0.1);
  const auto above = MannWhitneyTest(high, low);
  EXPECT_EQ(above->u, 9);
  EXPECT_DOUBLE_EQ(above->p_value, 0.1);
  // 4 against 4: 2 of C(8, 4) = 70.
  const std::vector<double> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
  EXPECT_DOUBLE_EQ(MannWhitneyTest(a, b)->p_value, 2.0 / 70.0);
}

TEST(MannWhitneyTest, InterleavedSamplesUseTheWholeExactDistribution) {
  // a = {1, 3, 5}, b = {2, 4, 6}: pairs with a > b are (3, 2), (5, 2), (5, 4): U = 3.
  // The counts of U = 0..9 over the 20 arrangements of 3 and 3 are
  // 1 1 2 3 3 3 3 2 1 1, so P(U <= 3) = 7/20 and p = 2 · 7/20.
  const std::vector<double> a = {1, 3, 5}, b = {2, 4, 6};
  const auto test = MannWhitneyTest(a, b);
  EXPECT_TRUE(test->exact);
  EXPECT_EQ(test->u, 3);
  EXPECT_DOUBLE_EQ(test->p_value, 0.7);
  // Identical samples sit in the middle: p = 1.
  const std::vector<double> c = {1, 4, 5, 8}, d = {2, 3, 6, 7};
  EXPECT_EQ(MannWhitneyTest(c, d)->u, 8);
  EXPECT_DOUBLE_EQ(MannWhitneyTest(c, d)->p_value, 1.0);
}

TEST(MannWhitneyTest, TiesUseTheNormalApproximationWithTieCorrection) {
  // a = {1, 1, 2}, b = {2, 3, 3}: mid-ranks 1.5 1.5 | 3.5 3.5 | 5.5 5.5, a's rank
  // sum 6.5, U = 6.5 − 6 = 0.5. Mean 4.5; three pairs of ties, Σ(t³ − t) = 18;
  // variance 9/12 · (7 − 18/30) = 4.8; z = (4 − 0.5)/√4.8 = 1.5975241;
  // p = erfc(z/√2) = 0.1101489.
  const std::vector<double> a = {1, 1, 2}, b = {2, 3, 3};
  const auto test = MannWhitneyTest(a, b);
  EXPECT_FALSE(test->exact);
  EXPECT_DOUBLE_EQ(test->u, 0.5);
  EXPECT_NEAR(test->p_value, 0.11014892, 1e-7);
  // Everything tied: no evidence of a difference.
  const std::vector<double> same = {2, 2, 2};
  EXPECT_DOUBLE_EQ(MannWhitneyTest(same, same)->p_value, 1.0);
}

TEST(MannWhitneyTest, LargeSamplesUseTheNormalApproximation) {
  // 21 against 21 separated values: U = 0, mean 220.5, variance 441 · 43/12 =
  // 1580.25, z = (220.5 − 0.5)/√1580.25, p = erfc(z/√2).
  std::vector<double> low, high;
  for (int i = 0; i < 21; ++i) {
    low.push_back(i);
    high.push_back(100 + i);
  }
  const auto test = MannWhitneyTest(low, high);
  EXPECT_FALSE(test->exact);
  EXPECT_EQ(test->u, 0);
  EXPECT_NEAR(test->p_value, std::erfc(220.0 / std::sqrt(1580.25) / std::sqrt(2.0)), 1e-15);
}

TEST(MannWhitneyTest, EmptySamplesHaveNoTestAndSmallSamplesCannotBeSignificant) {
  const std::vector<double> some = {1, 2}, none;
  EXPECT_FALSE(MannWhitneyTest(some, none).has_value());
  EXPECT_FALSE(MannWhitneyTest(none, some).has_value());
  EXPECT_DOUBLE_EQ(SmallestTwoSidedP(3, 3), 0.1);
  EXPECT_DOUBLE_EQ(SmallestTwoSidedP(4, 4), 2.0 / 70.0);
  EXPECT_DOUBLE_EQ(SmallestTwoSidedP(5, 5), 2.0 / 252.0);
  EXPECT_DOUBLE_EQ(SmallestTwoSidedP(1, 1), 1.0);
  EXPECT_DOUBLE_EQ(SmallestTwoSidedP(0, 4), 1.0);
}

}  // namespace
}  // namespace kvrt::cli
