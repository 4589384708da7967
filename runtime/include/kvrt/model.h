// A model an embedder holds: what LoadModel reads (kvrt/load_model.h) or
// FromSeed makes, and the generation loops that run on it.
//
// A Model is a cheap handle: copies share the weights and whatever an engine
// derives from them (packed or converted matrices), so a copy binds to the same
// caches and reuses the same prepared weights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kvrt/config.h"
#include "kvrt/engine_options.h"
#include "kvrt/error.h"
#include "kvrt/generation.h"
#include "kvrt/rng.h"
#include "kvrt/weight_format.h"

namespace kvrt {

// One weight tensor of a model as it keeps it: "f64" (exact values), "f32 panels"
// or "f32 panels (transposed)" (the fast engine's layout, no f64 copy).
struct ModelTensor {
  std::string name;
  std::vector<size_t> shape;
  std::string storage;
};

class Model {
 public:
  struct Impl;  // the library's own state, opaque outside it
  explicit Model(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

  // A model of `config` with the reference's seeded initialisation: Xavier-uniform
  // draws from `rng` in parameter order, gains 1.0 (spec/model.md §10), kept as
  // exact f64 values. `rng` advances only on success. For tests and benchmarks;
  // real models come from LoadModel.
  static Result<Model> FromSeed(const ModelConfig& config, SplitMix64& rng);

  const ModelConfig& config() const;
  // Every weight tensor, in the order of spec/model.md §9.
  std::vector<ModelTensor> tensors() const;
  // Scalars over all tensors.
  size_t parameter_count() const;

  // Packs or converts, now, the weights an engine with these options reads, which
  // the first session would otherwise build (converting a 110M model to q8_0
  // takes about a second). Sessions opened later with the same backend,
  // precision, weight format and int8 choice reuse them.
  Result<void> PrepareWeights(const EngineOptions& engine = {}) const;
  // The format every weight matrix is kept in for `requested`, fallbacks marked.
  std::vector<MatrixWeightFormat> WeightPlan(WeightFormat requested) const;

  // The last position's logits of one forward over the whole of `tokens`, with
  // no cache: the reference backend runs the specification's complete-prefix
  // pass; the fast backend a fresh prefill. The tokens are checked first
  // (EmptyTokens, ContextLengthExceeded, TokenIdOutOfBounds).
  Result<std::vector<double>> UncachedLogits(std::span<const uint32_t> tokens,
                                             const EngineOptions& engine = {}) const;

  const Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<const Impl> impl_;
};

// The cached loop: prefills the prompt once into a cache of the model's
// max_positions, then samples and decodes one token per step. Validation first
// (EmptyPrompt, PromptTooLong, PromptTokenOutOfBounds, EosTokenOutOfBounds,
// Sampling(InvalidTemperature), Sampling(InvalidTopK)) without drawing; then
// Sampling(...), LogitCountMismatch, WorkOverflow or Cache(...); draws of earlier
// successful steps are not rolled back. `on_token` sees every token as soon as
// it is sampled.
Result<GenerationResult> GenerateCached(const Model& model, std::span<const uint32_t> prompt,
                                        const GenerationConfig& config, SplitMix64& rng,
                                        const EngineOptions& engine = {},
                                        const TokenCallback& on_token = {});

// The uncached loop: every step forwards the whole prefix (the reference's
// complete-prefix pass on the reference backend). Forward failures are Model(...).
Result<GenerationResult> GenerateUncached(const Model& model, std::span<const uint32_t> prompt,
                                          const GenerationConfig& config, SplitMix64& rng,
                                          const EngineOptions& engine = {},
                                          const TokenCallback& on_token = {});

// Many requests over the sequence slots of one cache (kvrt/generation.h says how
// they are admitted). One result per request, in request order, each the one
// GenerateCached gives for it alone; errors of the whole run (the cache or the
// session cannot be built: Cache(...)) are returned instead.
Result<std::vector<ServedGeneration>> ServeGenerations(const Model& model,
                                                       std::span<const GenerationRequest> requests,
                                                       const ServeOptions& options);

// ServeGenerations over requests pulled from `source` one at a time, results
// delivered in request order as soon as they are known: memory is bounded by the
// slots and options.max_held_results, never by the number of requests. Errors
// of the whole run: Cache(...), AllocationFailed, or the source's or the
// callback's error; results already delivered stay delivered.
Result<void> ServeGenerationStream(const Model& model, GenerationRequestSource& source,
                                   const ServedCallback& deliver, const StreamOptions& options);

}  // namespace kvrt
