// One generation run as a cursor that is handed the logits of its current prefix
// and answers with the next token to feed or a stop (spec/sampling.md §5.2–5.3).
// The pull loop of both generators (RunGenerationLoop) and the request driver
// that serves many runs over the slots of one cache (ServeGenerations) both
// drive it, so a served request samples, records and stops exactly as it would
// alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kvrt/config.h"
#include "kvrt/error.h"
#include "kvrt/generation.h"
#include "kvrt/sampling.h"

namespace kvrt {

class GenerationCursor {
 public:
  // `prompt` validated; sizes every buffer for the whole run up front, so
  // Advance allocates nothing. The cursor samples with `sampler` (of the model's
  // vocabulary), which it borrows: a request driver lends each slot's sampler to
  // the request in that slot, so the vocabulary-sized buffers exist once per
  // slot, not once per request.
  static Result<GenerationCursor> Create(const ModelConfig& config, const GenerationConfig& request,
                                         std::span<const uint32_t> prompt, Sampler& sampler);

  // Samples one token from the logits of the current prefix, records the step
  // and applies the stops in the order EOS → token limit → context limit.
  // Returns true when the run goes on: feed token() and call again with the
  // logits of the longer prefix.
  Result<bool> Advance(std::span<const double> logits, SplitMix64& rng,
                       const TokenCallback& on_token);

  uint32_t token() const { return result_.generated.back(); }
  // The prompt, then every sampled token (its storage never moves: reserved up front).
  std::span<const uint32_t> prefix() const { return prefix_; }
  // The run so far: prompt, generated, steps, stop and the complete-prefix
  // score count (model_calls and the cache counters are the driver's).
  GenerationResult& result() { return result_; }

 private:
  GenerationCursor(const ModelConfig& config, const GenerationConfig& request, Sampler& sampler)
      : config_(config), request_(request), sampler_(&sampler) {}

  ModelConfig config_;
  GenerationConfig request_;
  Sampler* sampler_;
  GenerationResult result_;
  std::vector<uint32_t> prefix_;
};

}  // namespace kvrt
