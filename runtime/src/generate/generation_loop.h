// The loop both generators share (spec/sampling.md §5.2–5.3), open to tests so
// they can drive it with scripted logits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kvrt/config.h"
#include "kvrt/error.h"
#include "kvrt/generation.h"

namespace kvrt {

// Where a loop gets the logits of its next prefix.
class LogitSource {
 public:
  virtual ~LogitSource() = default;
  // Logits after the whole prompt.
  virtual Result<std::span<const double>> First(std::span<const uint32_t> prompt) = 0;
  // Logits after `prefix` (the previous prefix plus its newest token, `token`).
  virtual Result<std::span<const double>> Next(std::span<const uint32_t> prefix,
                                               uint32_t token) = 0;
  // Successful model invocations so far.
  virtual size_t calls() const = 0;
};

// Samples, records steps and applies the stops in the order EOS → token limit →
// context limit; asks `source` for the next logits only when the run goes on.
// `result.prompt` must hold the (validated) prompt; fills generated, steps, stop,
// model_calls and work.complete_prefix_attention_score_values.
Result<void> RunGenerationLoop(const ModelConfig& config, const GenerationConfig& request,
                               SplitMix64& rng, LogitSource& source, const TokenCallback& on_token,
                               GenerationResult& result);

}  // namespace kvrt
