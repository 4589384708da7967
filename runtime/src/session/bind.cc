// Bind: a cache and a model become a session (spec/kv-cache.md §3.3).
#include <memory>
#include <new>
#include <optional>
#include <string>

#include "engine/fast/fast_engine.h"
#include "session/decoder_kv_session.h"

namespace kvrt {

Result<DecoderKvSession> Bind(DecoderKvCache& cache, const DecoderModel& model,
                              EngineOptions options) try {
  // Claim the cache first, atomically: of any number of threads binding one free
  // cache, exactly one gets past this line. Every failure below frees it again.
  if (!cache.TryClaim()) {
    return Fail(ErrorCode::kCacheAlreadyBound, {},
                "decoder KV cache is already bound to a live session");
  }
  struct Claim {
    DecoderKvCache& cache;
    bool kept = false;
    ~Claim() {
      if (!kept) cache.Release();
    }
  } claim{cache};
  // Borrow first, then check: a concurrent update cannot slip in between the
  // revision check and the borrow. A rejected bind releases the borrows again.
  std::unique_ptr<SharedBorrows> borrows;
  try {
    borrows = std::make_unique<SharedBorrows>(model.parameters());
  } catch (const std::bad_alloc&) {
    const size_t count = model.parameters().size();
    return Fail(ErrorCode::kParameterAllocationFailed, {{"parameters", uint64_t{count}}},
                "could not allocate " + std::to_string(count) + " parameter entries");
  }
  if (Result<void> bindable = cache.CheckBinding(model); !bindable) {
    return Fail(std::move(bindable.error()));
  }
  if (Result<void> valid = options.Validate(); !valid) return Fail(std::move(valid.error()));
  if (options.precision != cache.precision()) {
    return Fail(
        ErrorCode::kUnsupportedBackend, {{"", std::string(PrecisionName(options.precision))}},
        "the cache stores " + std::string(PrecisionName(cache.precision())) +
            " rows but the engine computes in " + std::string(PrecisionName(options.precision)));
  }
  if (options.kv_type != cache.kv_type()) {
    return Fail(ErrorCode::kUnsupportedBackend, {{"", std::string(KvTypeName(options.kv_type))}},
                "the cache stores " + std::string(KvTypeName(cache.kv_type())) +
                    " K/V rows but the engine expects " + std::string(KvTypeName(options.kv_type)));
  }
  Result<std::unique_ptr<detail::Engine>> engine =
      Fail(ErrorCode::kUnsupportedBackend, {{"", std::string(BackendName(options.backend))}},
           "backend " + std::string(BackendName(options.backend)) + " is not available");
  if (options.backend == Backend::kReference) {
    engine = detail::CreateReferenceEngine(model, cache, options.weights);
  }
  if (options.backend == Backend::kFast) engine = detail::CreateFastEngine(model, cache, options);
  if (!engine) return Fail(std::move(engine.error()));
  const size_t logit_count = cache.batch_size() * model.config().vocabulary_size;
  std::optional<Buffer<double>> logits = Buffer<double>::Allocate(logit_count);
  if (!logits) {
    return Fail(ErrorCode::kAllocationFailed, {{"elements", uint64_t{logit_count}}},
                "could not allocate the session's logits");
  }
  // Keep the claim only once the session exists: building it copies the model
  // handle, which can fail, and a failed bind must leave the cache free.
  DecoderKvSession session(cache, model, options, std::move(borrows), std::move(*engine),
                           std::move(*logits));
  claim.kept = true;
  return session;
} catch (const std::bad_alloc&) {
  // An engine's bookkeeping (vectors, the engine object) or the session's model
  // handle; every buffer is allocated without throwing. Nothing was bound.
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the session's engine");
}

}  // namespace kvrt
