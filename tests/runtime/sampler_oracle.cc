#include "sampler_oracle.h"

#include <expected>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

namespace kvrt::testing {
namespace {

// One step of a Kahan sum (docs/sampling.md §0).
void KahanAdd(double& sum, double& compensation, double x) {
  const double y = x - compensation;
  const double t = sum + y;
  compensation = (t - sum) - y;
  sum = t;
}

double Kahan(const std::vector<double>& values) {
  double sum = 0.0, compensation = 0.0;
  for (const double x : values) KahanAdd(sum, compensation, x);
  return sum;
}

// Every id, by logit descending and id ascending (§1).
std::vector<uint32_t> RankOrder(const std::vector<double>& x) {
  std::vector<uint32_t> ids(x.size());
  std::iota(ids.begin(), ids.end(), 0u);
  std::stable_sort(ids.begin(), ids.end(), [&](uint32_t a, uint32_t b) { return x[a] > x[b]; });
  return ids;
}

// Temperature-1 probabilities of the candidates, position by position (§3).
std::vector<double> Probabilities(const std::vector<double>& x, const std::vector<uint32_t>& c) {
  std::vector<double> w(c.size());
  for (size_t j = 0; j < c.size(); ++j) w[j] = j == 0 ? 1.0 : std::exp(x[c[j]] - x[c[0]]);
  const double total = Kahan(w);
  for (double& value : w) value = value / total;
  return w;
}

std::vector<uint32_t> Typical(const std::vector<double>& x, const std::vector<uint32_t>& c, double tau) {
  const std::vector<double> q = Probabilities(x, c);
  std::vector<double> terms;
  for (const double p : q) {
    if (p > 0.0) terms.push_back(p * std::log(p));
  }
  const double entropy = -Kahan(terms);
  std::vector<double> distance(c.size());
  for (size_t j = 0; j < c.size(); ++j) {
    distance[j] = q[j] > 0.0 ? std::fabs(-std::log(q[j]) - entropy) : std::numeric_limits<double>::infinity();
  }
  std::vector<size_t> by_distance(c.size());
  std::iota(by_distance.begin(), by_distance.end(), size_t{0});
  std::stable_sort(by_distance.begin(), by_distance.end(),
                   [&](size_t a, size_t b) { return distance[a] < distance[b]; });
  std::vector<bool> keep(c.size(), false);
  double mass = 0.0, compensation = 0.0;
  for (const size_t j : by_distance) {
    keep[j] = true;
    KahanAdd(mass, compensation, q[j]);
    if (mass > tau) break;
  }
  std::vector<uint32_t> kept;
  for (size_t j = 0; j < c.size(); ++j) {
    if (keep[j]) kept.push_back(c[j]);
  }
  return kept;
}

std::vector<uint32_t> TopP(const std::vector<double>& x, const std::vector<uint32_t>& c, double pi) {
  const std::vector<double> q = Probabilities(x, c);
  double mass = 0.0, compensation = 0.0;
  for (size_t j = 0; j < c.size(); ++j) {
    KahanAdd(mass, compensation, q[j]);
    if (mass >= pi) return std::vector<uint32_t>(c.begin(), c.begin() + j + 1);
  }
  return c;
}

std::vector<uint32_t> MinP(const std::vector<double>& x, const std::vector<uint32_t>& c, double mu) {
  std::vector<uint32_t> kept;
  for (size_t j = 0; j < c.size(); ++j) {
    const double w = j == 0 ? 1.0 : std::exp(x[c[j]] - x[c[0]]);
    if (w >= mu) kept.push_back(c[j]);
  }
  return kept;
}

}  // namespace

std::expected<OracleOutcome, ErrorCode> OracleSample(std::span<const double> logits,
                                                     const SamplingMode& mode,
                                                     const SamplerOptions& options,
                                                     std::span<const uint32_t> sequence,
                                                     SplitMix64& rng, size_t top_n) {
  const size_t v = logits.size();
  if (v == 0) return std::unexpected(ErrorCode::kEmptyLogits);
  for (const double l : logits) {
    if (!std::isfinite(l)) return std::unexpected(ErrorCode::kNonFiniteLogit);
  }
  // §2: the bias in list order, then the penalties of the window's ids.
  std::vector<double> x(logits.begin(), logits.end());
  for (const LogitBias& entry : options.logit_bias) x[entry.token_id] = x[entry.token_id] + entry.bias;
  const bool penalties = options.penalty_last_n != 0 &&
                         (options.repetition_penalty != 1.0 || options.frequency_penalty != 0.0 ||
                          options.presence_penalty != 0.0);
  if (penalties) {
    const size_t window = options.penalty_last_n < 0
                              ? sequence.size()
                              : std::min(sequence.size(), static_cast<size_t>(options.penalty_last_n));
    std::map<uint32_t, uint64_t> counts;
    for (const uint32_t token : sequence.last(window)) ++counts[token];
    for (const auto& [id, count] : counts) {
      double value = x[id];
      value = value <= 0.0 ? value * options.repetition_penalty : value / options.repetition_penalty;
      x[id] = value - (static_cast<double>(count) * options.frequency_penalty + options.presence_penalty);
    }
  }
  for (const double value : x) {
    if (!std::isfinite(value)) return std::unexpected(ErrorCode::kNonFiniteLogit);
  }

  OracleOutcome out;
  const std::vector<uint32_t> rank = RankOrder(x);
  // §8: log-probabilities over every id, in id order.
  std::vector<double> exps(v);
  const double max = x[rank[0]];
  for (size_t id = 0; id < v; ++id) exps[id] = std::exp(x[id] - max);
  const double log_total = std::log(Kahan(exps));
  for (size_t i = 0; i < top_n; ++i) out.top.push_back({rank[i], (x[rank[i]] - max) - log_total});

  // §4–§6 on the top-k (or every id).
  const size_t k = mode.kind == SamplingMode::Kind::kTemperatureTopK ? mode.top_k : v;
  std::vector<uint32_t> c(rank.begin(), rank.begin() + k);
  if (options.typical_p < 1.0) c = Typical(x, c, options.typical_p);
  if (options.top_p < 1.0) c = TopP(x, c, options.top_p);
  if (options.min_p > 0.0) c = MinP(x, c, options.min_p);
  out.candidates = c;

  // §7: greedy, or the reference crate's weights and interval walk over c.
  if (mode.kind == SamplingMode::Kind::kGreedy) {
    out.selection.token_id = c[0];
  } else {
    const double t = mode.temperature;
    std::vector<double> p(v, 0.0), weights;
    for (size_t j = 0; j < c.size(); ++j) {
      const double gap = t < 1.0 ? (x[c[j]] - x[c[0]]) / t : (x[c[j]] / t) - (x[c[0]] / t);
      p[c[j]] = j == 0 ? 1.0 : std::exp(gap);
      weights.push_back(p[c[j]]);
    }
    const double total = Kahan(weights);
    for (const uint32_t id : c) p[id] = p[id] / total;
    if (std::fabs(Kahan(p) - 1.0) > 1e-12) return std::unexpected(ErrorCode::kInvalidProbabilitySum);
    const double u = rng.NextUnit();
    size_t last = v - 1;
    while (!(p[last] > 0.0)) --last;
    double start = 0.0;
    for (size_t id = 0; id <= last; ++id) {
      if (!(p[id] > 0.0)) continue;
      const double end = id == last ? 1.0 : std::min(start + p[id], 1.0);
      if (u < end || id == last) {
        out.selection = {static_cast<uint32_t>(id), u, start, end};
        break;
      }
      start = end;
    }
  }
  out.logprob = (x[out.selection.token_id] - max) - log_total;
  return out;
}

}  // namespace kvrt::testing
