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

#include "generate/generated_text.h"
#include "generate/sampler_chain.h"
#include "kvrt/config.h"
#include "kvrt/error.h"
#include "kvrt/generation.h"

namespace kvrt {

class GenerationCursor {
 public:
  // `prompt` validated; configures `chain` (of the model's vocabulary, which the
  // cursor borrows) for the request and sizes every other buffer for the whole
  // run up front (the text's, the steps'), so Advance allocates nothing until the
  // run ends. A request driver lends each slot's chain to the request in that
  // slot, so the vocabulary-sized buffers exist once per slot, not per request.
  static Result<GenerationCursor> Create(const ModelConfig& config, const GenerationConfig& request,
                                         std::span<const uint32_t> prompt, SamplerChain& chain);

  // Samples one token from the logits of the current prefix, records the step,
  // streams it and applies the stops in the order end token → stop string →
  // token limit → context limit → the callback's cancel. Returns true when the
  // run goes on: feed token() and call again with the logits of the longer prefix.
  Result<bool> Advance(std::span<const double> logits, SplitMix64& rng,
                       const TokenCallback& on_token);

  uint32_t token() const { return result_.generated.back(); }
  // The prompt, then every sampled token (its storage never moves: reserved up front).
  std::span<const uint32_t> prefix() const { return prefix_; }
  // The run so far: prompt, generated, steps, stop, text, log-probabilities and
  // the complete-prefix score count (model_calls and the cache counters are the
  // driver's).
  GenerationResult& result() { return result_; }

 private:
  GenerationCursor(const ModelConfig& config, const GenerationConfig& request, size_t capacity,
                   SamplerChain& chain, GeneratedText text)
      : config_(config), request_(request), capacity_(capacity), chain_(&chain),
        text_(std::move(text)) {}
  // One token from the sampler set, recorded as a step of the run.
  Result<uint32_t> SampleAndRecord(std::span<const double> logits, SplitMix64& rng);
  std::optional<GenerationStop> StopAfter(bool end_token, bool stop_string) const;

  ModelConfig config_;
  GenerationConfig request_;
  size_t capacity_;  // tokens the sequence may hold
  SamplerChain* chain_;
  GeneratedText text_;
  GenerationResult result_;
  std::vector<uint32_t> prefix_;
};

// The tokens a sequence of `request` may hold: its context_size, else the model's.
size_t ContextCapacity(const ModelConfig& config, const GenerationConfig& request);

}  // namespace kvrt
