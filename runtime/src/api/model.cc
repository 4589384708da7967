// kvrt/model.h over the library's DecoderModel.
#include <new>
#include <string>
#include <vector>

#include "api/model_impl.h"
#include "engine/reference/complete_prefix.h"
#include "generate/generate.h"
#include "generate/serve_stream.h"
#include "kvrt/model.h"
#include "kvrt/session.h"
#include "session/engine_threads.h"
#include "weights/prepare_weights.h"
#include "weights/weight_plan.h"

namespace kvrt {
namespace {

std::string StorageName(ParameterLayout layout) {
  switch (layout) {
    case ParameterLayout::kDenseF64: return "f64";
    case ParameterLayout::kPanelsF32: return "f32 panels";
    case ParameterLayout::kTransposedPanelsF32: return "f32 panels (transposed)";
  }
  return "?";
}

// The last row's logits of a prefill into a fresh single-sequence cache.
Result<std::vector<double>> PrefillLogits(const DecoderModel& model, std::span<const uint32_t> tokens,
                                          const EngineOptions& engine) {
  CacheOptions cache_options;
  cache_options.precision = engine.precision;
  cache_options.kv_type = engine.kv_type;
  Result<DecoderKvCache> cache = DecoderKvCache::Create(model, cache_options);
  if (!cache) return Fail(std::move(cache.error()));
  Result<DecoderKvSession> session = Bind(*cache, model, engine);
  if (!session) return Fail(std::move(session.error()));
  Result<StepOutput> output = session->Prefill(tokens);
  if (!output) return Fail(std::move(output.error()));
  return std::vector<double>(output->logits.begin(), output->logits.end());
}

}  // namespace

Result<Model> Model::FromSeed(const ModelConfig& config, SplitMix64& rng) try {
  Result<DecoderModel> model = DecoderModel::FromSeed(config, rng, ModelStorage::kDenseF64);
  if (!model) return Fail(std::move(model.error()));
  return WrapModel(std::move(*model));
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the model");
}

const ModelConfig& Model::config() const { return impl_->model.config(); }

std::vector<ModelTensor> Model::tensors() const {
  std::vector<ModelTensor> tensors;
  for (const ParameterPtr& parameter : impl_->model.parameters()) {
    tensors.push_back({parameter->name(), parameter->shape(), StorageName(parameter->layout())});
  }
  return tensors;
}

size_t Model::parameter_count() const {
  size_t scalars = 0;
  for (const ParameterPtr& parameter : impl_->model.parameters()) scalars += parameter->element_count();
  return scalars;
}

Result<void> Model::PrepareWeights(const EngineOptions& engine) const {
  return kvrt::PrepareWeights(impl_->model, engine);
}

std::vector<MatrixWeightFormat> Model::WeightPlan(WeightFormat requested) const {
  return PlanWeightFormats(impl_->model, requested);
}

Result<std::vector<double>> Model::UncachedLogits(std::span<const uint32_t> tokens,
                                                  const EngineOptions& engine) const try {
  // Bad input is rejected as the complete-prefix forward rejects it, whichever
  // engine runs.
  const size_t shape[2] = {1, tokens.size()};
  if (Result<void> valid = ValidateForwardInput(config(), tokens, shape); !valid) {
    return Fail(std::move(valid.error()));
  }
  if (Result<void> valid = engine.Validate(); !valid) return Fail(std::move(valid.error()));
  if (engine.backend == Backend::kReference) {
    // The oracle's pass runs on the format's dequantized weights.
    Result<DecoderModel> oracle = DequantizedModel(impl_->model, engine.weights);
    if (!oracle) return Fail(std::move(oracle.error()));
    return LastLogitsCompletePrefix(*oracle, tokens);
  }
  Result<EngineThreads> threads = ResolveEngineThreads(engine);
  if (!threads) return Fail(std::move(threads.error()));
  return PrefillLogits(impl_->model, tokens, threads->options);
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the logits");
}

Result<GenerationResult> GenerateCached(const Model& model, std::span<const uint32_t> prompt,
                                        const GenerationConfig& config, SplitMix64& rng,
                                        const EngineOptions& engine, const TokenCallback& on_token) {
  Result<EngineThreads> threads = ResolveEngineThreads(engine);
  if (!threads) return Fail(std::move(threads.error()));
  return GenerateCached(model.impl().model, prompt, config, rng, threads->options, on_token);
}

Result<GenerationResult> GenerateUncached(const Model& model, std::span<const uint32_t> prompt,
                                          const GenerationConfig& config, SplitMix64& rng,
                                          const EngineOptions& engine, const TokenCallback& on_token) {
  Result<EngineThreads> threads = ResolveEngineThreads(engine);
  if (!threads) return Fail(std::move(threads.error()));
  return GenerateUncached(model.impl().model, prompt, config, rng, threads->options, on_token);
}

Result<std::vector<ServedGeneration>> ServeGenerations(const Model& model,
                                                       std::span<const GenerationRequest> requests,
                                                       const ServeOptions& options) {
  Result<EngineThreads> threads = ResolveEngineThreads(options.engine);
  if (!threads) return Fail(std::move(threads.error()));
  ServeOptions resolved = options;
  resolved.engine = threads->options;
  return ServeGenerations(model.impl().model, requests, resolved);
}

Result<void> ServeGenerationStream(const Model& model, GenerationRequestSource& source,
                                   const ServedCallback& deliver, const StreamOptions& options) {
  Result<EngineThreads> threads = ResolveEngineThreads(options.serve.engine);
  if (!threads) return Fail(std::move(threads.error()));
  StreamOptions resolved = options;
  resolved.serve.engine = threads->options;
  return ServeGenerationStream(model.impl().model, source, deliver, resolved);
}

}  // namespace kvrt
