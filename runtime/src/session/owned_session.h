// A session together with the cache it binds, for library code that opens one
// for a single run (the generation loops).
#pragma once

#include <memory>

#include "kv/decoder_kv_cache.h"
#include "kvrt/engine_options.h"
#include "kvrt/error.h"
#include "kvrt/steps.h"
#include "model/decoder_model.h"
#include "session/decoder_kv_session.h"

namespace kvrt {

class OwnedSession {
 public:
  // DecoderKvCache::Create's errors (a cache of `cache`'s slots and capacity in
  // the engine's precision), then Bind's.
  static Result<OwnedSession> Open(const DecoderModel& model, const EngineOptions& engine,
                                   CacheOptions cache = {});

  DecoderKvSession& session() { return *session_; }
  const DecoderKvCache& cache() const { return *cache_; }

 private:
  OwnedSession(std::unique_ptr<DecoderKvCache> cache, std::unique_ptr<DecoderKvSession> session)
      : cache_(std::move(cache)), session_(std::move(session)) {}
  // Destroyed in reverse order: the session releases the cache before it goes.
  std::unique_ptr<DecoderKvCache> cache_;  // heap: the session keeps its address
  std::unique_ptr<DecoderKvSession> session_;
};

}  // namespace kvrt
