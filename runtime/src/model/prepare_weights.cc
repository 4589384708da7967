// DecoderModel::PrepareWeights: the engines' weight caches (packed_weights.h) filled
// ahead of the first session.
#include <new>

#include "kvrt/model.h"
#include "model/model_internals.h"
#include "model/packed_weights.h"

namespace kvrt {

Result<void> DecoderModel::PrepareWeights(const EngineOptions& engine) const try {
  detail::EngineWeightsCache& cache = detail::ModelInternals::WeightsCache(*this);
  // The cache keeps what it builds; only whether it could is returned.
  const auto built = [](auto&& result) -> Result<void> {
    if (!result) return Fail(std::move(result.error()));
    return {};
  };
  if (engine.backend == Backend::kReference) {
    if (engine.weights == WeightFormat::kAsStored) return {};
    return built(cache.Dequantized(*this, engine.weights));
  }
  if (engine.precision == Precision::kF32) {
    return built(cache.Get<float>(*this, engine.weights, engine.int8_activations));
  }
  return built(cache.Get<double>(*this, engine.weights, engine.int8_activations));
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the engine's weights");
}

}  // namespace kvrt
