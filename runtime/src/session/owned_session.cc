#include "session/owned_session.h"

#include <new>

namespace kvrt {

Result<OwnedSession> OwnedSession::Open(const DecoderModel& model, const EngineOptions& engine,
                                        CacheOptions cache_options) try {
  cache_options.precision = engine.precision;
  cache_options.kv_type = engine.kv_type;
  Result<DecoderKvCache> cache = DecoderKvCache::Create(model, cache_options);
  if (!cache) return Fail(std::move(cache.error()));
  auto owned = std::make_unique<DecoderKvCache>(std::move(*cache));
  Result<DecoderKvSession> session = Bind(*owned, model, engine);
  if (!session) return Fail(std::move(session.error()));
  // The session's box first: if its allocation throws, `owned` still holds the
  // cache the bound `session` points to (an argument list may move `owned` into
  // the parameter before evaluating make_unique, and clang does).
  auto bound = std::make_unique<DecoderKvSession>(std::move(*session));
  return OwnedSession(std::move(owned), std::move(bound));
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the session");
}

}  // namespace kvrt
