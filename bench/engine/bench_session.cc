#include "bench_session.h"

#include <stdexcept>
#include <utility>

namespace kvrt::bench {

BenchSession::BenchSession(const DecoderModel& model, threading::ThreadPool* pool, BenchSessionOptions options) {
  Result<DecoderKvCache> created = DecoderKvCache::Create(model, options.cache);
  if (!created) throw std::runtime_error(created.error().message());
  cache = std::make_unique<DecoderKvCache>(std::move(*created));
  EngineOptions engine;
  engine.backend = Backend::kFast;
  engine.precision = Precision::kF32;
  engine.pool = pool;
  engine.weights = options.weights;
  engine.batch_invariant = options.batch_invariant;
  engine.int8_activations = options.int8_activations;
  engine.kv_type = options.cache.kv_type;
  Result<DecoderKvSession> bound = Bind(*cache, model, engine);
  if (!bound) throw std::runtime_error(bound.error().message());
  session = std::make_unique<DecoderKvSession>(std::move(*bound));
}

void BenchSession::Prefill(std::span<const uint32_t> tokens) {
  session->Reset();
  if (!session->Prefill(tokens)) throw std::runtime_error("prefill failed");
}

}  // namespace kvrt::bench
