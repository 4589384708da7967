// Next-token sampling on SplitMix64.
//
// The reference crate's two modes are bit-exact with it (spec/sampling.md §2):
// greedy, and temperature/top-k with ranking by (logit descending, id ascending),
// weights exp(gap) in rank order, Kahan sums, true division, and an interval walk
// in token-ID order. Greedy never draws; a successful temperature/top-k call
// draws exactly once; errors never draw.
//
// The sampler set around them (SamplerOptions, TokenSampler) runs in llama.cpp's
// default order: logit bias → repetition/frequency/presence penalties → top-k →
// typical-p → top-p → min-p → temperature → one draw. Its arithmetic (f64, a
// fixed order, ties to the lowest id) is written down in docs/sampling.md; each
// sampler at its identity value is skipped, so it changes nothing, not even the
// draws.
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

// How the token is picked from the candidates that survive the sampler set:
// the first-ranked one (greedy), or one draw at a temperature over the top k
// (TemperatureTopK, the reference crate's mode) or over them all (Temperature:
// no top-k, the same bits as TemperatureTopK with k = the vocabulary size).
struct SamplingMode {
  enum class Kind { kGreedy, kTemperatureTopK, kTemperature };
  Kind kind = Kind::kGreedy;
  double temperature = 1.0;
  size_t top_k = 1;  // kTemperatureTopK only

  static SamplingMode Greedy() { return {}; }
  static SamplingMode TemperatureTopK(double temperature, size_t top_k) {
    return {Kind::kTemperatureTopK, temperature, top_k};
  }
  static SamplingMode Temperature(double temperature) {
    return {Kind::kTemperature, temperature, 0};
  }
};

// A value added to one token's logit before anything else.
struct LogitBias {
  uint32_t token_id = 0;
  double bias = 0.0;
};

// The samplers that shape the candidates before the mode picks one, in the order
// they run. The defaults are the identity values: each sampler at its identity
// is skipped. Penalties, typical-p, top-p and min-p work on the temperature-1
// probabilities of the candidates left by the samplers before them.
struct SamplerOptions {
  // Added to the logits in list order (an id listed twice gets both).
  std::vector<LogitBias> logit_bias;
  // For every token that occurs c ≥ 1 times among the last `penalty_last_n`
  // tokens of the sequence (prompt included, as llama.cpp counts them): a
  // positive logit is divided by repetition_penalty, any other multiplied by it,
  // then c · frequency_penalty + presence_penalty is subtracted.
  double repetition_penalty = 1.0;
  double frequency_penalty = 0.0;
  double presence_penalty = 0.0;
  int64_t penalty_last_n = 64;  // 0: no penalties; -1: the whole sequence
  // Locally typical sampling: the candidates whose surprisal is closest to the
  // entropy, until their probability exceeds typical_p.
  double typical_p = 1.0;
  // Nucleus: the smallest most-likely set whose probability reaches top_p.
  double top_p = 1.0;
  // The candidates whose probability is at least min_p times the largest.
  double min_p = 0.0;
};

// The checks of SamplerOptions for a vocabulary of `v`, in field order:
// LogitBiasOutOfBounds{token_id, vocabulary_size}; InvalidSamplerSetting{setting,
// value} for a bias that is not finite, a repetition penalty that is not finite
// and positive, a frequency or presence penalty that is not finite,
// penalty_last_n below -1, or typical_p, top_p or min_p outside [0, 1].
Result<void> ValidateSamplerOptions(const SamplerOptions& options, size_t vocabulary_size);

// One alternative of a step's log-probabilities.
struct TokenLogprob {
  uint32_t token_id = 0;
  double logprob = 0.0;
  bool operator==(const TokenLogprob&) const = default;
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
// vocabulary_size} (0 or > v; TemperatureTopK only). Greedy always passes.
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

// The whole sampler set for a host that writes its own decode loop (llama.cpp's
// llama_sampler chain): a mode, the options, its own SplitMix64 and the tokens
// the penalties count. Sample does not record the token it picks: Accept every
// prompt token and every token fed to the model, as llama.cpp's samplers expect.
// A generation loop (GenerateCached) picks exactly the tokens a TokenSampler
// fed the same logits and tokens picks. Every buffer is allocated by Create:
// Sample and Accept allocate nothing.
class TokenSampler {
 public:
  struct Impl;  // the library's own state, opaque outside it

  // ValidateSamplingMode, then ValidateSamplerOptions; AllocationFailed.
  static Result<TokenSampler> Create(const SamplingMode& mode, const SamplerOptions& options,
                                     size_t vocabulary_size, uint64_t rng_state);
  TokenSampler(TokenSampler&&) noexcept;
  TokenSampler& operator=(TokenSampler&&) noexcept;
  ~TokenSampler();

  // Picks a token from `logits` (one per id): EmptyLogits, VocabularyTooLarge,
  // NonFiniteLogit (also when the bias or a penalty leaves the finite range),
  // LogitCountMismatch (not the vocabulary size), InvalidProbabilitySum. Errors
  // never draw.
  Result<TokenSelection> Sample(std::span<const double> logits);
  // Appends `token` to the sequence the penalties look at (TokenIdOutOfBounds).
  Result<void> Accept(uint32_t token);
  // Forgets every accepted token and sets the RNG back to its initial state.
  void Reset();
  uint64_t rng_state() const;

 private:
  explicit TokenSampler(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvrt
