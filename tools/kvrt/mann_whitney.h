// The two-sided Mann–Whitney U test (Wilcoxon rank-sum), which `kvrt bench-compare`
// runs on two runs' repetitions: does one run's time tend to be larger than the
// other's? It assumes nothing about the shape of the noise, only that the samples
// of a run are independent draws, so one slow outlier (a neighbour's burst) moves
// it by one rank, not by its size.
//
// U counts the pairs (a_i, b_j) with a_i > b_j, a tie counting one half (computed
// from mid-ranks). The p-value is two-sided:
//  - exact when there are no ties and both samples hold at most kExactLimit values:
//    the distribution of U over all C(n1 + n2, n1) equally likely arrangements,
//    counted by the recurrence N(n1, n2, u) = N(n1 − 1, n2, u − n2) + N(n1, n2 − 1, u),
//    p = min(1, 2 · min(P(U ≤ u), P(U ≥ u)));
//  - otherwise the normal approximation with the tie correction and a continuity
//    correction of ½: mean n1·n2/2, variance n1·n2/12 · ((n + 1) − Σ(t³ − t)/(n(n − 1)))
//    over the groups of t tied values, z = max(0, |U − mean| − ½)/σ, p = erfc(z/√2).
#pragma once

#include <cstddef>
#include <optional>
#include <span>

namespace kvrt::cli {

struct MannWhitney {
  double u = 0;        // U of the first sample
  double p_value = 1;  // two-sided
  bool exact = false;  // from the exact distribution (else the normal approximation)
};

inline constexpr size_t kExactLimit = 20;

// nullopt when either sample is empty.
std::optional<MannWhitney> MannWhitneyTest(std::span<const double> a, std::span<const double> b);

// The smallest two-sided p-value samples of n1 and n2 values can give: 2 / C(n1 + n2, n1)
// (the two extreme arrangements). A test of 3 against 3 repetitions never goes below
// 0.1, so it cannot be significant at 0.05 whatever the times.
double SmallestTwoSidedP(size_t n1, size_t n2);

}  // namespace kvrt::cli
