// The sampler set of one sequence (docs/sampling.md): logit bias → penalties →
// top-k → typical-p → top-p → min-p → the mode's pick (greedy, or one draw at a
// temperature), with the log-probabilities a step may record. Every buffer is
// sized for the vocabulary at Create, and only those the settings use exist, so
// Sample and Accept allocate nothing. A sampler at its identity value is
// skipped: with every option at identity the chain is the reference crate's
// sampler, draw for draw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "core/buffer.h"
#include "generate/penalty_window.h"
#include "kvrt/error.h"
#include "kvrt/rng.h"
#include "kvrt/sampling.h"

namespace kvrt {

// What a step records besides the token: its log-probability and the most
// likely alternatives (as many as `top` holds).
struct StepLogprobs {
  double chosen = 0.0;
  std::span<TokenLogprob> top;
};

class SamplerChain {
 public:
  // A chain for `vocabulary_size` ids, greedy with every option at identity,
  // holding the two buffers every setting uses; AllocationFailed.
  static Result<SamplerChain> Create(size_t vocabulary_size);
  // Create, then Configure.
  static Result<SamplerChain> Create(const SamplingMode& mode, const SamplerOptions& options,
                                     size_t vocabulary_size, size_t longest_sequence);
  // New settings and an empty history: ValidateSamplingMode, then
  // ValidateSamplerOptions, then the buffers these settings need and the chain
  // lacks (AllocationFailed); an error changes no setting. A sequence never
  // holds more than `longest_sequence` tokens (it bounds the penalty window).
  Result<void> Configure(const SamplingMode& mode, const SamplerOptions& options, size_t longest_sequence);

  // Picks a token from `logits` (one per id). EmptyLogits, VocabularyTooLarge,
  // NonFiniteLogit (of the logits, or of their shaped values),
  // LogitCountMismatch, InvalidProbabilitySum; errors never draw. `logprobs`,
  // when given, receives the step's log-probabilities.
  Result<TokenSelection> Sample(std::span<const double> logits, SplitMix64& rng,
                                StepLogprobs* logprobs = nullptr);
  // A token of the sequence (< the vocabulary size), for the penalties.
  void Accept(uint32_t token);
  void ClearHistory();

  size_t vocabulary_size() const { return order_.size(); }
  // The candidates the last draw chose from, in rank order (empty after a
  // greedy pick, which ranks only the first token unless typical-p is on).
  std::span<const uint32_t> last_candidates() const { return {order_.data(), candidates_}; }

 private:
  SamplerChain() = default;
  bool DropsCandidates() const;
  Result<std::span<const double>> Shape(std::span<const double> logits);
  Result<TokenSelection> Pick(std::span<const double> x, SplitMix64& rng);
  size_t KeepCandidates(std::span<const double> x, size_t count);

  SamplingMode mode_;
  SamplerOptions options_;
  std::optional<PenaltyWindow> window_;  // once some settings had the penalties active
  size_t candidates_ = 0;                // the last draw's candidates at the front of order_
  Buffer<uint32_t> order_;               // [V] ids; the candidates in rank order at the front
  Buffer<double> probabilities_;         // [V] the final draw's probabilities, by id
  Buffer<double> shaped_;                // [V] logits after bias and penalties (when either is active)
  Buffer<double> weights_;               // [V] candidate weights or probabilities (typical, top-p, min-p)
  Buffer<double> distances_;             // [V] |surprisal − entropy| per candidate (typical)
  Buffer<uint32_t> by_distance_;         // [V] candidate positions by distance (typical)
};

}  // namespace kvrt
