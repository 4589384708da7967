// DecoderModel::PrepareWeights: the engines' weight caches (packed_weights.h) filled
// ahead of the first session.
#include <new>

#include "kvrt/model.h"
#include "model/model_internals.h"
#include "model/packed_weights.h"

namespace kvrt {

Result<void> DecoderModel::PrepareWeights(const EngineOptions& engine) const try {
  detail::EngineWeightsCache& cache = detail::ModelInternals::WeightsCache(*this);
  if (engine.backend == Backend::kReference) {
    if (engine.weights == WeightFormat::kAsStored) return {};
    Result<std::shared_ptr<const DecoderModel>> dequantized =
        cache.Dequantized(*this, engine.weights);
    if (!dequantized) return Fail(std::move(dequantized.error()));
    return {};
  }
  if (engine.precision == Precision::kF32) {
    Result<std::shared_ptr<const detail::EngineWeights<float>>> packed =
        cache.Get<float>(*this, engine.weights, engine.int8_activations);
    if (!packed) return Fail(std::move(packed.error()));
    return {};
  }
  Result<std::shared_ptr<const detail::EngineWeights<double>>> packed =
      cache.Get<double>(*this, engine.weights, engine.int8_activations);
  if (!packed) return Fail(std::move(packed.error()));
  return {};
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the engine's weights");
}

}  // namespace kvrt
