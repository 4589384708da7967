// The C API's engines, caches and sessions (kvrt/kvrt.h).
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>

#include "c_api/c_api_internal.h"
#include "session/engine_threads.h"
#include "weights/prepare_weights.h"

using kvrt::c_api::Guard;
using kvrt::c_api::InvalidArgument;
using kvrt::c_api::MakeError;

namespace kvrt::c_api {

namespace {

// The integer a C caller stored in an enum field. C lets any int live there, and
// loading a value outside the enumerators as the C++ enum is undefined, so the
// field's bits are read as its underlying integer type instead.
template <class CEnum>
long long RawEnum(const CEnum& field) {
  std::underlying_type_t<CEnum> raw = 0;
  static_assert(sizeof(raw) == sizeof(field));
  std::memcpy(&raw, &field, sizeof(raw));
  return static_cast<long long>(raw);
}

}  // namespace

Result<EngineOptions> EngineFromCWithoutPool(const kvrt_engine_options* engine) {
  kvrt_engine_options chosen = engine ? *engine : kvrt_engine_options_default();
  chosen.threads = 1;
  chosen.pool = nullptr;
  std::unique_ptr<threading::ThreadPool> no_pool;
  return EngineFromC(&chosen, no_pool);
}

Result<EngineOptions> EngineFromC(const kvrt_engine_options* engine,
                                  std::unique_ptr<threading::ThreadPool>& pool) {
  const kvrt_engine_options chosen = engine ? *engine : kvrt_engine_options_default();
  EngineOptions options;
  const long long backend = RawEnum(chosen.backend), precision = RawEnum(chosen.precision);
  switch (backend) {
    case KVRT_BACKEND_REFERENCE: options.backend = Backend::kReference; break;
    case KVRT_BACKEND_FAST: options.backend = Backend::kFast; break;
    default:
      return Fail(ErrorCode::kUnsupportedBackend, {{"", std::to_string(backend)}},
                  "unknown backend " + std::to_string(backend));
  }
  switch (precision) {
    case KVRT_PRECISION_F64: options.precision = Precision::kF64; break;
    case KVRT_PRECISION_F32: options.precision = Precision::kF32; break;
    default:
      return Fail(ErrorCode::kInvalidArgument, {}, "unknown precision " + std::to_string(precision));
  }
  // The C values equal WeightFormat's (both are stable, checked by a test).
  const long long number = RawEnum(chosen.weights);
  const WeightFormat weights = static_cast<WeightFormat>(number & 0xFF);
  if (number < 0 || number > 0xFF || !IsKnownWeightFormat(weights)) {
    return Fail(ErrorCode::kInvalidArgument, {}, "unknown weights " + std::to_string(number));
  }
  options.weights = weights;
  options.max_rows_per_step =
      chosen.max_rows_per_step == 0 ? EngineOptions::kDefaultMaxRowsPerStep : chosen.max_rows_per_step;
  bool allow_batch_variance = false;
  for (const auto& [value, name, flag] :
       {std::tuple{chosen.allow_batch_variance, "allow_batch_variance", &allow_batch_variance},
        std::tuple{chosen.int8_activations, "int8_activations", &options.int8_activations},
        std::tuple{chosen.bf16_activations, "bf16_activations", &options.bf16_activations}}) {
    if (value != 0 && value != 1) {
      return Fail(ErrorCode::kInvalidArgument, {},
                  std::string(name) + " must be 0 or 1, got " + std::to_string(value));
    }
    *flag = value == 1;
  }
  options.batch_invariant = !allow_batch_variance;
  switch (RawEnum(chosen.kv_type)) {
    case KVRT_KV_TYPE_ENGINE: options.kv_type = KvType::kEngine; break;
    case KVRT_KV_TYPE_F16: options.kv_type = KvType::kF16; break;
    case KVRT_KV_TYPE_BF16: options.kv_type = KvType::kBf16; break;
    case KVRT_KV_TYPE_Q8_0: options.kv_type = KvType::kQ8_0; break;
    default:
      return Fail(ErrorCode::kInvalidArgument, {},
                  "unknown kv_type " + std::to_string(RawEnum(chosen.kv_type)));
  }
  if (options.backend == Backend::kReference && options.precision != Precision::kF64) {
    return Fail(ErrorCode::kUnsupportedBackend, {{"", std::string("f32")}},
                "the reference backend computes in f64 only");
  }
  options.threads = chosen.threads;
  options.pool = chosen.pool != nullptr ? chosen.pool->pool.get() : nullptr;
  Result<EngineThreads> threads = ResolveEngineThreads(options);
  if (!threads) return Fail(std::move(threads.error()));
  pool = std::move(threads->owned_pool);
  return threads->options;
}

}  // namespace kvrt::c_api

extern "C" {

kvrt_engine_options kvrt_engine_options_default(void) {
  return kvrt_engine_options{KVRT_BACKEND_FAST, KVRT_PRECISION_F32, 0, nullptr, KVRT_WEIGHTS_AS_STORED,
                             kvrt::EngineOptions::kDefaultMaxRowsPerStep, 0, 0, KVRT_KV_TYPE_ENGINE, 0};
}

kvrt_error* kvrt_pool_create(size_t threads, kvrt_pool** out) {
  return Guard([&]() -> kvrt_error* {
    if (out == nullptr) return InvalidArgument("kvrt_pool_create needs an output");
    if (threads > 1024) return InvalidArgument("kvrt_pool_create: at most 1024 threads");
    auto pool = std::make_unique<kvrt_pool>();
    pool->pool = std::make_unique<kvrt::threading::ThreadPool>(threads);
    *out = pool.release();
    return nullptr;
  });
}

kvrt_error* kvrt_pool_attach_current_arena(kvrt_pool** out) {
  return Guard([&]() -> kvrt_error* {
    if (out == nullptr) return InvalidArgument("kvrt_pool_attach_current_arena needs an output");
    auto pool = std::make_unique<kvrt_pool>();
    pool->pool = kvrt::threading::ThreadPool::OnCurrentArena();
    *out = pool.release();
    return nullptr;
  });
}

size_t kvrt_pool_threads(const kvrt_pool* pool) { return pool ? pool->pool->threads() : 0; }
void kvrt_pool_free(kvrt_pool* pool) { delete pool; }

kvrt_error* kvrt_cache_create(const kvrt_model* model, size_t capacity, kvrt_precision precision,
                              kvrt_cache** out) {
  return Guard([&]() -> kvrt_error* {
    if (model == nullptr || out == nullptr) return InvalidArgument("kvrt_cache_create needs a model and an output");
    if (precision != KVRT_PRECISION_F32 && precision != KVRT_PRECISION_F64) {
      return InvalidArgument("unknown precision " + std::to_string(static_cast<int>(precision)));
    }
    kvrt::CacheOptions options;
    options.capacity = capacity;
    options.precision = precision == KVRT_PRECISION_F32 ? kvrt::Precision::kF32 : kvrt::Precision::kF64;
    kvrt::Result<kvrt::DecoderKvCache> cache = kvrt::DecoderKvCache::Create(model->model, options);
    if (!cache) return MakeError(cache.error());
    *out = new kvrt_cache{std::make_shared<kvrt::DecoderKvCache>(std::move(*cache))};
    return nullptr;
  });
}

void kvrt_cache_free(kvrt_cache* cache) { delete cache; }
size_t kvrt_cache_len(const kvrt_cache* cache) { return cache ? cache->cache->len() : 0; }
size_t kvrt_cache_capacity(const kvrt_cache* cache) { return cache ? cache->cache->capacity() : 0; }
size_t kvrt_cache_bytes(const kvrt_cache* cache) { return cache ? cache->cache->storage_bytes() : 0; }

kvrt_error* kvrt_model_prepare_weights(const kvrt_model* model, const kvrt_engine_options* engine) {
  return Guard([&]() -> kvrt_error* {
    if (model == nullptr) return InvalidArgument("kvrt_model_prepare_weights needs a model");
    // The weights do not depend on the threads: validate the options without a pool.
    kvrt::Result<kvrt::EngineOptions> options = kvrt::c_api::EngineFromCWithoutPool(engine);
    if (!options) return MakeError(options.error());
    if (kvrt::Result<void> prepared = PrepareWeights(model->model, *options); !prepared) {
      return MakeError(prepared.error());
    }
    return nullptr;
  });
}

kvrt_error* kvrt_session_bind(kvrt_cache* cache, const kvrt_model* model, const kvrt_engine_options* engine,
                              kvrt_session** out) {
  return Guard([&]() -> kvrt_error* {
    if (cache == nullptr || model == nullptr || out == nullptr) {
      return InvalidArgument("kvrt_session_bind needs a cache, a model and an output");
    }
    auto session = std::make_unique<kvrt_session>();
    session->cache = cache->cache;
    kvrt::Result<kvrt::EngineOptions> options = kvrt::c_api::EngineFromC(engine, session->pool);
    if (!options) return MakeError(options.error());
    session->model.emplace(model->model);
    kvrt::Result<kvrt::DecoderKvSession> bound = Bind(*session->cache, *session->model, *options);
    if (!bound) return MakeError(bound.error());
    session->session.emplace(std::move(*bound));
    *out = session.release();
    return nullptr;
  });
}

namespace {

using kvrt::c_api::ConcurrentUse;
using kvrt::c_api::SessionEntry;

kvrt_error* Prefill(kvrt_session& session, const uint32_t* tokens, size_t count, const double** logits) {
  if (tokens == nullptr && count > 0) return InvalidArgument("kvrt_session_prefill needs a session and tokens");
  kvrt::Result<kvrt::StepOutput> step = session.session->Prefill(std::span<const uint32_t>(tokens, count));
  if (!step) return MakeError(step.error());
  if (logits != nullptr) *logits = step->logits.data();
  return nullptr;
}

kvrt_error* Decode(kvrt_session& session, uint32_t token, const double** logits) {
  kvrt::Result<kvrt::StepOutput> step = session.session->Decode(token);
  if (!step) return MakeError(step.error());
  if (logits != nullptr) *logits = step->logits.data();
  return nullptr;
}

// Rounds the step's logits into the session's float buffer (inside the same
// claim on the session as the step).
kvrt_error* StepF32(kvrt_session& session, kvrt_error* error, const double* logits, const float** out) {
  if (error != nullptr || out == nullptr) return error;
  const size_t count = session.model->config().vocabulary_size;
  session.logits_f32.assign(logits, logits + count);
  *out = session.logits_f32.data();
  return nullptr;
}

}  // namespace

kvrt_error* kvrt_session_prefill(kvrt_session* session, const uint32_t* tokens, size_t count,
                                 const double** logits) {
  return Guard([&]() -> kvrt_error* {
    if (session == nullptr) return InvalidArgument("kvrt_session_prefill needs a session and tokens");
    const SessionEntry entry(*session);
    if (!entry.entered()) return ConcurrentUse("kvrt_session_prefill");
    return Prefill(*session, tokens, count, logits);
  });
}

kvrt_error* kvrt_session_decode(kvrt_session* session, uint32_t token, const double** logits) {
  return Guard([&]() -> kvrt_error* {
    if (session == nullptr) return InvalidArgument("kvrt_session_decode needs a session");
    const SessionEntry entry(*session);
    if (!entry.entered()) return ConcurrentUse("kvrt_session_decode");
    return Decode(*session, token, logits);
  });
}

kvrt_error* kvrt_session_prefill_f32(kvrt_session* session, const uint32_t* tokens, size_t count,
                                     const float** logits) {
  return Guard([&]() -> kvrt_error* {
    if (session == nullptr) return InvalidArgument("kvrt_session_prefill needs a session and tokens");
    const SessionEntry entry(*session);
    if (!entry.entered()) return ConcurrentUse("kvrt_session_prefill_f32");
    const double* wide = nullptr;
    kvrt_error* error = Prefill(*session, tokens, count, &wide);
    return StepF32(*session, error, wide, logits);
  });
}

kvrt_error* kvrt_session_decode_f32(kvrt_session* session, uint32_t token, const float** logits) {
  return Guard([&]() -> kvrt_error* {
    if (session == nullptr) return InvalidArgument("kvrt_session_decode needs a session");
    const SessionEntry entry(*session);
    if (!entry.entered()) return ConcurrentUse("kvrt_session_decode_f32");
    const double* wide = nullptr;
    kvrt_error* error = Decode(*session, token, &wide);
    return StepF32(*session, error, wide, logits);
  });
}

void kvrt_session_reset(kvrt_session* session) {
  if (session == nullptr) return;
  // No error to return: a reset that finds another call inside does nothing.
  const kvrt::c_api::SessionEntry entry(*session);
  if (entry.entered()) session->session->Reset();
}

void kvrt_session_free(kvrt_session* session) { delete session; }

}  // extern "C"
