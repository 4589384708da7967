// The generation loops over the library's own model (kvrt/generation.h says
// what they validate and return; kvrt/model.h's functions of the same names call
// these).
#pragma once

#include <span>
#include <vector>

#include "kvrt/engine_options.h"
#include "kvrt/error.h"
#include "kvrt/generation.h"
#include "kvrt/rng.h"
#include "model/decoder_model.h"

namespace kvrt {

// The cached loop: builds a cache of capacity max_positions, binds it with
// `engine`, prefills, then samples and decodes. Errors after validation are
// Sampling(...), LogitCountMismatch, WorkOverflow or Cache(...); draws of earlier
// successful steps are not rolled back.
Result<GenerationResult> GenerateCached(const DecoderModel& model, std::span<const uint32_t> prompt,
                                        const GenerationConfig& config, SplitMix64& rng,
                                        EngineOptions engine = {},
                                        const TokenCallback& on_token = {});

// The uncached loop: every step forwards the whole prefix. The reference backend
// runs the complete-prefix pass; the fast backend replays the prefix through a
// fresh prefill. Forward failures are Model(...).
Result<GenerationResult> GenerateUncached(const DecoderModel& model,
                                          std::span<const uint32_t> prompt,
                                          const GenerationConfig& config, SplitMix64& rng,
                                          EngineOptions engine = {},
                                          const TokenCallback& on_token = {});

// One result per request, in request order. Errors of the whole run (the cache
// or the session cannot be built: Cache(...)) are returned instead.
Result<std::vector<ServedGeneration>> ServeGenerations(const DecoderModel& model,
                                                       std::span<const GenerationRequest> requests,
                                                       const ServeOptions& options);

}  // namespace kvrt
