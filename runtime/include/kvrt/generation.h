// What a generation asks for and returns (spec/sampling.md §3–5,
// spec/kv-cache.md §3.11); the loops themselves are GenerateCached,
// GenerateUncached and ServeGenerations (kvrt/model.h).
//
// Both loops validate the request first (EmptyPrompt, PromptTooLong,
// PromptTokenOutOfBounds, EosTokenOutOfBounds, Sampling(InvalidTemperature),
// Sampling(InvalidTopK)) without drawing, sample one token per step and stop in the
// order EOS (or another end-of-generation id) → token limit → context limit. The cached loop prefills once and
// decodes only when later logits are needed (the last sampled token is never fed
// to the model); the uncached loop replays the complete prefix every step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "kvrt/config.h"
#include "kvrt/engine_options.h"
#include "kvrt/error.h"
#include "kvrt/rng.h"
#include "kvrt/sampling.h"

namespace kvrt {

struct GenerationConfig {
  SamplingMode mode;
  std::optional<uint32_t> eos_token;  // tests generated tokens only
  size_t max_new_tokens = 0;          // 0 returns at once (after validation)
  // More ids that end the run as eos_token does (stop "eos"): a chat model's
  // end-of-generation set, Tokenizer::end_of_generation_ids(). Each is checked
  // against the vocabulary like eos_token (EosTokenOutOfBounds).
  std::vector<uint32_t> end_of_generation;

  // Whether generating `token` ends the run: eos_token or one of end_of_generation.
  bool Ends(uint32_t token) const;
};

enum class GenerationStop { kEos, kTokenLimit, kContextLimit };
std::string_view GenerationStopName(GenerationStop stop);  // "eos", "token-limit", "context-limit"

// One record per generated token (spec/sampling.md §3).
struct GenerationStep {
  size_t prefix_length = 0;  // tokens whose last-position logits were sampled
  uint32_t token_id = 0;
  std::optional<double> unit_draw;
  double interval_start = 0.0;
  double interval_end = 1.0;
  bool operator==(const GenerationStep&) const = default;
};

// The cached loop's work (spec/sampling.md §5.4): cache counters after the run,
// plus the score values a complete-prefix forward of every sampled prefix costs.
struct CachedGenerationWork {
  uint64_t prefill_tokens = 0;
  uint64_t decode_tokens = 0;
  uint64_t layer_cache_count = 0;
  uint64_t cache_appends = 0;
  uint64_t qkv_projection_rows = 0;
  uint64_t cached_attention_score_values = 0;
  uint64_t complete_prefix_attention_score_values = 0;
  bool operator==(const CachedGenerationWork&) const = default;
};

struct GenerationResult {
  std::vector<uint32_t> prompt;
  std::vector<uint32_t> generated;  // new tokens only, including a final EOS
  GenerationStop stop = GenerationStop::kTokenLimit;
  std::vector<GenerationStep> steps;
  size_t model_calls = 0;      // uncached: full-prefix forwards; cached: prefill + decodes
  size_t final_cache_len = 0;  // cached loop only
  CachedGenerationWork work;   // cached loop only
};

// Called with every token as soon as it is sampled (for streaming output).
using TokenCallback = std::function<void(uint32_t token)>;



// Serving many requests over the sequence slots of one cache. Each request is
// one GenerateCached call: its prompt, its sampling config and stops, and its own
// RNG state. Requests are admitted in order, as slots free up and not before
// their arrival step; chunked prefills run in the same steps as other slots'
// decodes. Because every step is batch-invariant, every request's result
// (tokens, draws, stop, final RNG state, cache length and work counters) is the
// one GenerateCached gives for it alone with the same engine options.
struct GenerationRequest {
  std::vector<uint32_t> prompt;
  GenerationConfig config;
  uint64_t rng_state = 0;   // SplitMix64 state
  size_t arrival_step = 0;  // not admitted before this step
};

struct ServedGeneration {
  // GenerateCached's error for this request alone, or nullopt and `result`.
  std::optional<Error> error;
  GenerationResult result;
  uint64_t final_rng_state = 0;
  size_t admitted_step = 0;  // the step its first prompt chunk ran in
  size_t finished_step = 0;  // the step its last token was sampled in
};

// GenerateCached's request validation (spec/sampling.md §5.1 steps 1–5), for a
// caller that checks requests before it queues them.
Result<void> ValidateCachedRequest(const ModelConfig& config, std::span<const uint32_t> prompt,
                                   const GenerationConfig& request);

struct ServeOptions {
  size_t slots = 4;
  EngineOptions engine;     // as for GenerateCached (the session's capacity is max_positions)
  size_t prefill_chunk = 0; // most prompt rows per slot per step; 0: as many as fit
};

// The streaming form of ServeGenerations (kvrt/model.h, ServeGenerationStream):
// requests are pulled from a source one at a time and results handed out in
// request order as soon as they are known, so a run over any number of requests
// holds only what its slots are working on. Where such a run gets its requests,
// in order:
class GenerationRequestSource {
 public:
  virtual ~GenerationRequestSource() = default;
  // The next request, or nullopt after the last one. An error ends the run with it.
  virtual Result<std::optional<GenerationRequest>> Next() = 0;
};

// Receives the result of request `index` (0-based, in the source's order); called
// in request order. An error ends the run with it.
using ServedCallback = std::function<Result<void>(size_t index, ServedGeneration& served)>;

struct StreamOptions {
  ServeOptions serve;
  size_t max_held_results = 1024;  // at least 1
};

}  // namespace kvrt
