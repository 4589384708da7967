// Next-token sampling on SplitMix64, bit-exact with the reference crate
// (spec/sampling.md §2): greedy, and temperature/top-k with ranking by (logit
// descending, id ascending), weights exp(gap) in rank order, Kahan sums, true
// division, and an interval walk in token-ID order. Greedy never draws; a
// successful temperature/top-k call draws exactly once; errors never draw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "kvrt/error.h"
#include "kvrt/rng.h"

namespace kvrt {

struct SamplingMode {
  enum class Kind { kGreedy, kTemperatureTopK };
  Kind kind = Kind::kGreedy;
  double temperature = 1.0;
  size_t top_k = 1;

  static SamplingMode Greedy() { return {}; }
  static SamplingMode TemperatureTopK(double temperature, size_t top_k) {
    return {Kind::kTemperatureTopK, temperature, top_k};
  }
};

// The selected token and the half-open interval [start, end) of the unit draw.
// Greedy records no draw and [0, 1).
struct TokenSelection {
  uint32_t token_id = 0;
  std::optional<double> unit_draw;
  double interval_start = 0.0;
  double interval_end = 1.0;
};

// The full distribution behind a selection (spec/sampling.md §2.7).
struct TokenDistribution {
  std::vector<uint32_t> rank_order;              // all ids by rank
  std::vector<uint32_t> retained_in_rank_order;  // the first `keep` of rank_order
  std::vector<double> probabilities;             // by id; +0.0 for dropped ids
  struct Interval {
    uint32_t token_id;
    double start;
    double end;
  };
  std::vector<Interval> intervals;  // positive support, in id order
};

// The mode checks of spec/sampling.md §2.1 step 5 for a vocabulary of `v`:
// InvalidTemperature{value} (NaN, ±inf, ≤ 0) before InvalidTopK{top_k,
// vocabulary_size} (0 or > v). Greedy always passes.
Result<void> ValidateSamplingMode(const SamplingMode& mode, size_t vocabulary_size);

// A sampler with working buffers for one vocabulary size, allocated once, so that
// sampling inside a decode loop allocates nothing.
class Sampler {
 public:
  Sampler(Sampler&&) noexcept;
  Sampler& operator=(Sampler&&) noexcept;
  ~Sampler();

  // AllocationFailed{values} when the buffers cannot be allocated.
  static Result<Sampler> Create(size_t vocabulary_size);

  // Samples from `logits` (one per id). Errors, in order: EmptyLogits,
  // VocabularyTooLarge, NonFiniteLogit{token_id, value}, AllocationFailed (logits
  // longer than this sampler's vocabulary), InvalidTemperature, InvalidTopK,
  // InvalidProbabilitySum. `distribution`, when given, receives the whole
  // distribution (this allocates); it never changes the selection or the RNG.
  Result<TokenSelection> Sample(std::span<const double> logits, const SamplingMode& mode,
                                SplitMix64& rng, TokenDistribution* distribution = nullptr);

 private:
  struct Buffers;  // ids in rank order, probabilities by id
  explicit Sampler(std::unique_ptr<Buffers> buffers);
  std::unique_ptr<Buffers> buffers_;
};

// One-off convenience: creates a sampler for logits.size() and samples.
Result<TokenSelection> SampleNextToken(std::span<const double> logits, const SamplingMode& mode,
                                       SplitMix64& rng, TokenDistribution* distribution = nullptr);

}  // namespace kvrt
