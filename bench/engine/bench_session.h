// The session every engine benchmark drives: a fast f32 session of one model over
// a cache of its own (the cache stays put while the session is bound to it).
// Set-up failures throw: they end the benchmark binary, never a timed loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "kv/decoder_kv_cache.h"
#include "session/decoder_kv_session.h"
#include "kvrt/threading/thread_pool.h"
#include "kvrt/weight_format.h"

namespace kvrt::bench {

struct BenchSessionOptions {
  CacheOptions cache;                        // f32, one slot, the model's context by default
  WeightFormat weights = WeightFormat::kAsStored;
  bool batch_invariant = true;               // EngineOptions::batch_invariant
  bool int8_activations = false;             // EngineOptions::int8_activations
};

struct BenchSession {
  BenchSession(const DecoderModel& model, threading::ThreadPool* pool, BenchSessionOptions options = {});

  // Reset, then prefill `tokens` from position 0.
  void Prefill(std::span<const uint32_t> tokens);

  std::unique_ptr<DecoderKvCache> cache;
  std::unique_ptr<DecoderKvSession> session;
};

}  // namespace kvrt::bench
