#include "generate/candidate_filters.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "generate/sampling_steps.h"

namespace kvrt::sampling {

void WeighAtTemperatureOne(std::span<const double> x, const uint32_t* candidates, size_t count,
                           double* w) {
  const double m = x[candidates[0]];
  w[0] = 1.0;  // as in spec §2.4: exp is not evaluated for the first candidate
  for (size_t j = 1; j < count; ++j) w[j] = std::exp(x[candidates[j]] - m);
}

void NormalizeInRankOrder(double* w, size_t count) {
  KahanSum total;
  for (size_t j = 0; j < count; ++j) total.Add(w[j]);
  const double sum = total.value();
  for (size_t j = 0; j < count; ++j) w[j] = w[j] / sum;
}

size_t KeepTypical(std::span<const double> x, uint32_t* candidates, size_t count, double typical_p,
                   double* q, double* distance, uint32_t* by_distance) {
  WeighAtTemperatureOne(x, candidates, count, q);
  NormalizeInRankOrder(q, count);
  // Entropy H = −Σ q·log q over the candidates with q > 0 (0·log 0 counts as 0).
  KahanSum plogp;
  for (size_t j = 0; j < count; ++j) {
    if (q[j] > 0.0) plogp.Add(q[j] * std::log(q[j]));
  }
  const double entropy = -plogp.value();
  for (size_t j = 0; j < count; ++j) {
    distance[j] = q[j] > 0.0 ? std::fabs(-std::log(q[j]) - entropy)
                             : std::numeric_limits<double>::infinity();
  }
  std::iota(by_distance, by_distance + count, uint32_t{0});
  std::sort(by_distance, by_distance + count, [&](uint32_t a, uint32_t b) {
    return distance[a] < distance[b] || (distance[a] == distance[b] && a < b);
  });
  size_t kept = count;
  KahanSum mass;
  for (size_t i = 0; i < count; ++i) {
    mass.Add(q[by_distance[i]]);
    if (mass.value() > typical_p) {
      kept = i + 1;
      break;
    }
  }
  // Back to rank order: the kept positions ascending, moved forward in place.
  std::sort(by_distance, by_distance + kept);
  for (size_t i = 0; i < kept; ++i) candidates[i] = candidates[by_distance[i]];
  return kept;
}

size_t KeepTopP(std::span<const double> x, uint32_t* candidates, size_t count, double top_p, double* q) {
  WeighAtTemperatureOne(x, candidates, count, q);
  NormalizeInRankOrder(q, count);
  KahanSum mass;
  for (size_t j = 0; j < count; ++j) {
    mass.Add(q[j]);
    if (mass.value() >= top_p) return j + 1;
  }
  return count;  // rounding kept the total below top_p: every candidate stays
}

size_t KeepMinP(std::span<const double> x, uint32_t* candidates, size_t count, double min_p, double* w) {
  WeighAtTemperatureOne(x, candidates, count, w);
  size_t kept = 0;
  for (size_t j = 0; j < count; ++j) {
    if (w[j] >= min_p) candidates[kept++] = candidates[j];
  }
  return kept;
}

}  // namespace kvrt::sampling
