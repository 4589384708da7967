// PrepareWeights: the engines' weight caches (engine_weights.h) filled ahead of
// the first session.
#include <new>

#include "weights/engine_weights.h"
#include "weights/prepare_weights.h"

namespace kvrt {

Result<void> PrepareWeights(const DecoderModel& model, const EngineOptions& engine) try {
  detail::EngineWeightsCache& cache = detail::WeightsCacheOf(model);
  // The cache keeps what it builds; only whether it could is returned.
  const auto built = [](auto&& result) -> Result<void> {
    if (!result) return Fail(std::move(result.error()));
    return {};
  };
  if (engine.backend == Backend::kReference) {
    if (engine.weights == WeightFormat::kAsStored) return {};
    return built(cache.Dequantized(model, engine.weights));
  }
  if (engine.precision == Precision::kF32) {
    return built(cache.Get<float>(model, engine.weights, {engine.int8_activations, engine.bf16_activations}));
  }
  return built(cache.Get<double>(model, engine.weights));
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the engine's weights");
}

}  // namespace kvrt
