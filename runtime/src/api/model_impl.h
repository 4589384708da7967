// What the public handles hold (kvrt/model.h, kvrt/session.h): the library's
// own model, cache and session, and the pool a session started for itself.
#pragma once

#include <memory>
#include <optional>
#include <utility>

#include "kv/decoder_kv_cache.h"
#include "kvrt/model.h"
#include "kvrt/session.h"
#include "kvrt/threading/thread_pool.h"
#include "model/decoder_model.h"
#include "session/decoder_kv_session.h"

namespace kvrt {

struct Model::Impl {
  explicit Impl(DecoderModel built) : model(std::move(built)) {}
  DecoderModel model;
};

// The handle of a library model (copies share its nodes).
inline Model WrapModel(DecoderModel model) {
  return Model(std::make_shared<const Model::Impl>(std::move(model)));
}

struct KvCache::Impl {
  explicit Impl(DecoderKvCache bound) : cache(std::move(bound)) {}
  DecoderKvCache cache;  // never moves while a session holds it: the handle owns this box
};

struct Session::Impl {
  // Destroyed in reverse order: the session releases the cache, then its pool
  // stops, then an owned cache goes.
  std::unique_ptr<KvCache> owned_cache;  // Session::Open's
  KvCache* cache = nullptr;              // the bound cache (owned or the caller's)
  std::unique_ptr<threading::ThreadPool> pool;  // started for this session
  std::optional<DecoderKvSession> session;
};

}  // namespace kvrt
