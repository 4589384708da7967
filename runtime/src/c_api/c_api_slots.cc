// The C API's sequence slots: multi-sequence caches, steps over slots and the
// per-slot operations (kvrt/kvrt.h).
#include <string>

#include "c_api/c_api_internal.h"

using kvrt::c_api::ConcurrentUse;
using kvrt::c_api::Guard;
using kvrt::c_api::InvalidArgument;
using kvrt::c_api::MakeError;
using kvrt::c_api::SessionEntry;

extern "C" {

kvrt_error* kvrt_cache_create_slots(const kvrt_model* model, size_t slots, size_t capacity,
                                    kvrt_precision precision, kvrt_cache** out) {
  return Guard([&]() -> kvrt_error* {
    if (model == nullptr || out == nullptr) {
      return InvalidArgument("kvrt_cache_create_slots needs a model and an output");
    }
    if (precision != KVRT_PRECISION_F32 && precision != KVRT_PRECISION_F64) {
      return InvalidArgument("unknown precision " + std::to_string(static_cast<int>(precision)));
    }
    kvrt::CacheOptions options;
    options.batch_size = slots;
    options.capacity = capacity;
    options.precision = precision == KVRT_PRECISION_F32 ? kvrt::Precision::kF32 : kvrt::Precision::kF64;
    kvrt::Result<kvrt::DecoderKvCache> cache = kvrt::DecoderKvCache::Create(model->model, options);
    if (!cache) return MakeError(cache.error());
    *out = new kvrt_cache{std::make_shared<kvrt::DecoderKvCache>(std::move(*cache))};
    return nullptr;
  });
}

kvrt_error* kvrt_cache_create_for_engine(const kvrt_model* model, size_t slots, size_t capacity,
                                         const kvrt_engine_options* engine, kvrt_cache** out) {
  return Guard([&]() -> kvrt_error* {
    if (model == nullptr || out == nullptr) {
      return InvalidArgument("kvrt_cache_create_for_engine needs a model and an output");
    }
    // Only the engine's precision and KV type matter here: no pool is started.
    kvrt::Result<kvrt::EngineOptions> options = kvrt::c_api::EngineFromCWithoutPool(engine);
    if (!options) return MakeError(options.error());
    if (kvrt::Result<void> valid = options->Validate(); !valid) return MakeError(valid.error());
    kvrt::CacheOptions cache_options;
    cache_options.batch_size = slots;
    cache_options.capacity = capacity;
    cache_options.precision = options->precision;
    cache_options.kv_type = options->kv_type;
    kvrt::Result<kvrt::DecoderKvCache> cache = kvrt::DecoderKvCache::Create(model->model, cache_options);
    if (!cache) return MakeError(cache.error());
    *out = new kvrt_cache{std::make_shared<kvrt::DecoderKvCache>(std::move(*cache))};
    return nullptr;
  });
}

size_t kvrt_cache_slots(const kvrt_cache* cache) { return cache ? cache->cache->slot_count() : 0; }
size_t kvrt_cache_slot_len(const kvrt_cache* cache, size_t slot) {
  return cache ? cache->cache->slot_len(slot) : 0;
}

kvrt_error* kvrt_session_step(kvrt_session* session, const kvrt_slot_run* runs, size_t count,
                              const double** logits) {
  return Guard([&]() -> kvrt_error* {
    if (session == nullptr || (runs == nullptr && count > 0)) {
      return InvalidArgument("kvrt_session_step needs a session and runs");
    }
    const SessionEntry entry(*session);
    if (!entry.entered()) return ConcurrentUse("kvrt_session_step");
    session->runs.clear();
    for (size_t r = 0; r < count; ++r) {
      const kvrt_slot_run& run = runs[r];
      if (run.tokens == nullptr && run.count > 0) {
        return InvalidArgument("kvrt_session_step: run " + std::to_string(r) + " has no tokens");
      }
      if (run.phase != KVRT_RUN_PREFILL && run.phase != KVRT_RUN_DECODE) {
        return InvalidArgument("kvrt_session_step: run " + std::to_string(r) + " has an unknown phase");
      }
      session->runs.push_back({run.slot, std::span<const uint32_t>(run.tokens, run.count),
                               run.phase == KVRT_RUN_PREFILL ? kvrt::RunPhase::kPrefill
                                                             : kvrt::RunPhase::kDecode,
                               run.completes_prompt != 0});
    }
    kvrt::Result<kvrt::SlotStepOutput> step = session->session->Step(session->runs);
    if (!step) return MakeError(step.error());
    if (logits != nullptr) *logits = step->logits.data();
    return nullptr;
  });
}

size_t kvrt_session_max_step_rows(const kvrt_session* session) {
  return session ? session->session->max_rows_per_step() : 0;
}
size_t kvrt_session_max_run_rows(const kvrt_session* session) {
  return session ? session->session->max_rows_per_run() : 0;
}

kvrt_error* kvrt_session_reset_slot(kvrt_session* session, size_t slot) {
  return Guard([&]() -> kvrt_error* {
    if (session == nullptr) return InvalidArgument("kvrt_session_reset_slot needs a session");
    const SessionEntry entry(*session);
    if (!entry.entered()) return ConcurrentUse("kvrt_session_reset_slot");
    if (kvrt::Result<void> done = session->session->ResetSlot(slot); !done) return MakeError(done.error());
    return nullptr;
  });
}

kvrt_error* kvrt_session_truncate_slot(kvrt_session* session, size_t slot, size_t len) {
  return Guard([&]() -> kvrt_error* {
    if (session == nullptr) return InvalidArgument("kvrt_session_truncate_slot needs a session");
    const SessionEntry entry(*session);
    if (!entry.entered()) return ConcurrentUse("kvrt_session_truncate_slot");
    if (kvrt::Result<void> done = session->session->TruncateSlot(slot, len); !done) {
      return MakeError(done.error());
    }
    return nullptr;
  });
}

kvrt_error* kvrt_session_fork_slot(kvrt_session* session, size_t source, size_t destination) {
  return Guard([&]() -> kvrt_error* {
    if (session == nullptr) return InvalidArgument("kvrt_session_fork_slot needs a session");
    const SessionEntry entry(*session);
    if (!entry.entered()) return ConcurrentUse("kvrt_session_fork_slot");
    if (kvrt::Result<void> done = session->session->ForkSlot(source, destination); !done) {
      return MakeError(done.error());
    }
    return nullptr;
  });
}

}  // extern "C"
