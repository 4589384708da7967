// The scalar oracle of the sampler set: docs/sampling.md written out step by
// step, with full sorts and plain loops and nothing shared with the library but
// SplitMix64. The fast path (SamplerChain, TokenSampler, the generation loops)
// must reproduce it bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <vector>

#include "kvrt/error.h"
#include "kvrt/rng.h"
#include "kvrt/sampling.h"

namespace kvrt::testing {

struct OracleOutcome {
  TokenSelection selection;
  std::vector<uint32_t> candidates;  // the final candidate set, in rank order
  double logprob = 0.0;              // of the chosen token
  std::vector<TokenLogprob> top;     // the `top_n` most likely ids
};

// One step of the sampler set over `logits`; `sequence` is every token so far
// (prompt included), the penalties look at its last penalty_last_n. An error is
// its ErrorCode; the RNG then has not moved.
std::expected<OracleOutcome, ErrorCode> OracleSample(std::span<const double> logits,
                                                     const SamplingMode& mode,
                                                     const SamplerOptions& options,
                                                     std::span<const uint32_t> sequence,
                                                     SplitMix64& rng, size_t top_n);

}  // namespace kvrt::testing
