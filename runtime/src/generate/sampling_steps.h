// The steps of spec/sampling.md §2 that the reference crate's sampler (Sampler)
// and the sampler set (SamplerChain) share: logit checks, the rank order, the
// temperature weights of a retained set, the probability check and the interval
// walk of the draw. Every step is f64 in a fixed order (docs/sampling.md).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "kvrt/error.h"
#include "kvrt/sampling.h"

namespace kvrt::sampling {

// Compensated (Kahan) running sum: y = x − c; t = s + y; c = (t − s) − y; s = t.
class KahanSum {
 public:
  void Add(double x) {
    const double y = x - compensation_;
    const double t = sum_ + y;
    compensation_ = (t - sum_) - y;
    sum_ = t;
  }
  double value() const { return sum_; }

 private:
  double sum_ = 0.0;
  double compensation_ = 0.0;
};

// Rank order: logit descending, then id ascending. -0.0 and +0.0 tie numerically.
struct RanksBefore {
  const double* logits;
  bool operator()(uint32_t a, uint32_t b) const {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  }
};

// Spec §2.1 steps 1–3: a vocabulary of u32 ids whose logits are all finite.
Result<void> ValidateLogits(std::span<const double> logits);

// The rank order's first id: the largest logit, the smallest id among equal ones.
uint32_t FirstRanked(std::span<const double> logits);

// Spec §2.2: all ids into `order`, the first `ranked` of them in rank order.
void RankIds(std::span<const double> logits, size_t ranked, uint32_t* order);

// Spec §2.4 steps 1–4 over `retained` (ids in rank order, at least one): the
// weights at `temperature`, their Kahan total in rank order and the true
// division by it, into `p` (by id; entries of other ids are left as they are).
Result<void> WeighRetained(std::span<const double> logits, std::span<const uint32_t> retained,
                           double temperature, double* p);

// Spec §2.4 step 5: the Kahan sum of all v probabilities in id order is 1 within 1e-12.
Result<void> CheckProbabilitySum(const double* p, size_t v);

// Spec §2.5: the id whose interval holds the unit draw `u` (p by id, v ids).
TokenSelection SelectByDraw(const double* p, size_t v, double u);

// Walks the positive-support ids in ascending order with their half-open
// intervals (spec §2.5): the start is the plainly added running sum, the last
// positive id ends at exactly 1.0 and an interval reaching 1.0 early caps
// there. Calls visit(id, start, end, is_last) until it returns true.
template <class Visit>
void WalkIntervals(const double* p, size_t v, Visit&& visit) {
  size_t last = v - 1;  // the largest id with p > 0; it always exists
  while (p[last] <= 0.0) --last;
  double start = 0.0;
  for (size_t id = 0; id <= last; ++id) {
    if (!(p[id] > 0.0)) continue;
    const double end = id == last ? 1.0 : std::min(start + p[id], 1.0);
    if (visit(static_cast<uint32_t>(id), start, end, id == last)) return;
    start = end;
  }
}

}  // namespace kvrt::sampling
