#include "mann_whitney.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace kvrt::cli {
namespace {

// P(U ≤ u) and P(U ≥ u) for samples of n1 and n2 values without ties.
std::pair<double, double> ExactTails(size_t n1, size_t n2, size_t u) {
  const size_t max_u = n1 * n2;
  // counts[i][j][v]: arrangements of i and j values with U = v (rolled over j).
  auto index = [&](size_t i, size_t j, size_t v) { return (i * (n2 + 1) + j) * (max_u + 1) + v; };
  std::vector<double> counts((n1 + 1) * (n2 + 1) * (max_u + 1), 0.0);
  for (size_t i = 0; i <= n1; ++i) {
    for (size_t j = 0; j <= n2; ++j) {
      if (i == 0 || j == 0) {
        counts[index(i, j, 0)] = 1;  // one arrangement, no pair
        continue;
      }
      // The largest value belongs to the first sample (it beats all j of the
      // second) or to the second (it beats nothing of the first).
      for (size_t v = 0; v <= i * j; ++v) {
        double total = counts[index(i, j - 1, v)];
        if (v >= j) total += counts[index(i - 1, j, v - j)];
        counts[index(i, j, v)] = total;
      }
    }
  }
  double all = 0, below = 0, above = 0;
  for (size_t v = 0; v <= max_u; ++v) {
    const double count = counts[index(n1, n2, v)];
    all += count;
    if (v <= u) below += count;
    if (v >= u) above += count;
  }
  return {below / all, above / all};
}

}  // namespace

double SmallestTwoSidedP(size_t n1, size_t n2) {
  if (n1 == 0 || n2 == 0) return 1;
  double arrangements = 1;  // C(n1 + n2, n1), built up exactly enough in doubles
  for (size_t k = 1; k <= n1; ++k) arrangements = arrangements * static_cast<double>(n2 + k) / static_cast<double>(k);
  return std::min(1.0, 2.0 / arrangements);
}

std::optional<MannWhitney> MannWhitneyTest(std::span<const double> a, std::span<const double> b) {
  if (a.empty() || b.empty()) return std::nullopt;
  const size_t n1 = a.size(), n2 = b.size(), n = n1 + n2;
  std::vector<std::pair<double, bool>> pooled;  // value, from the first sample
  pooled.reserve(n);
  for (double value : a) pooled.push_back({value, true});
  for (double value : b) pooled.push_back({value, false});
  std::sort(pooled.begin(), pooled.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  double rank_sum = 0, tie_term = 0;
  bool ties = false;
  for (size_t begin = 0; begin < n;) {
    size_t end = begin + 1;
    while (end < n && pooled[end].first == pooled[begin].first) ++end;
    const double group = static_cast<double>(end - begin);
    const double mid_rank = (static_cast<double>(begin + 1) + static_cast<double>(end)) / 2;
    for (size_t k = begin; k < end; ++k) {
      if (pooled[k].second) rank_sum += mid_rank;
    }
    if (end - begin > 1) {
      ties = true;
      tie_term += group * group * group - group;
    }
    begin = end;
  }
  MannWhitney result;
  result.u = rank_sum - static_cast<double>(n1) * static_cast<double>(n1 + 1) / 2;
  if (!ties && n1 <= kExactLimit && n2 <= kExactLimit) {
    const auto [below, above] = ExactTails(n1, n2, static_cast<size_t>(result.u));
    result.p_value = std::min(1.0, 2 * std::min(below, above));
    result.exact = true;
    return result;
  }
  const double pairs = static_cast<double>(n1) * static_cast<double>(n2);
  const double total = static_cast<double>(n);
  const double variance = pairs / 12 * ((total + 1) - tie_term / (total * (total - 1)));
  if (!(variance > 0)) return result;  // every value tied: no evidence either way, p = 1
  const double z = std::max(0.0, std::abs(result.u - pairs / 2) - 0.5) / std::sqrt(variance);
  result.p_value = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  return result;
}

}  // namespace kvrt::cli
