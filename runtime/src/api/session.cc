// kvrt/session.h over the library's DecoderKvCache and DecoderKvSession.
#include <memory>
#include <new>

#include "api/model_impl.h"
#include "kvrt/session.h"
#include "session/engine_threads.h"

namespace kvrt {
namespace {

Error HandleAllocationFailed(const char* what) {
  return Error(ErrorCode::kAllocationFailed, {}, std::string("could not allocate the ") + what);
}

}  // namespace

// ---- KvCache ----------------------------------------------------------------

KvCache::KvCache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KvCache::KvCache(KvCache&&) noexcept = default;
KvCache& KvCache::operator=(KvCache&&) noexcept = default;
KvCache::~KvCache() = default;

Result<KvCache> KvCache::Create(const Model& model, CacheOptions options) try {
  Result<DecoderKvCache> cache = DecoderKvCache::Create(model.impl().model, options);
  if (!cache) return Fail(std::move(cache.error()));
  return KvCache(std::make_unique<Impl>(std::move(*cache)));
} catch (const std::bad_alloc&) {
  return Fail(HandleAllocationFailed("cache"));
}

Result<KvCache> KvCache::Clone() const try {
  Result<DecoderKvCache> copy = impl_->cache.Clone();
  if (!copy) return Fail(std::move(copy.error()));
  return KvCache(std::make_unique<Impl>(std::move(*copy)));
} catch (const std::bad_alloc&) {
  return Fail(HandleAllocationFailed("cache"));
}

size_t KvCache::capacity() const { return impl_->cache.capacity(); }
size_t KvCache::slot_count() const { return impl_->cache.slot_count(); }
Precision KvCache::precision() const { return impl_->cache.precision(); }
size_t KvCache::len() const { return impl_->cache.len(); }
bool KvCache::prefill_complete() const { return impl_->cache.prefill_complete(); }
bool KvCache::is_bound() const { return impl_->cache.is_bound(); }
const KvWork& KvCache::work() const { return impl_->cache.work(); }
size_t KvCache::slot_len(size_t slot) const { return impl_->cache.slot_len(slot); }
bool KvCache::slot_prefill_complete(size_t slot) const {
  return impl_->cache.slot_prefill_complete(slot);
}
KvWork KvCache::slot_work(size_t slot) const { return impl_->cache.slot_work(slot); }
size_t KvCache::storage_bytes() const { return impl_->cache.storage_bytes(); }

// ---- Session ----------------------------------------------------------------

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

Result<Session> Session::Bind(KvCache& cache, const Model& model, const EngineOptions& engine) try {
  Result<EngineThreads> threads = ResolveEngineThreads(engine);
  if (!threads) return Fail(std::move(threads.error()));
  auto impl = std::make_unique<Impl>();
  Result<DecoderKvSession> session = kvrt::Bind(cache.impl().cache, model.impl().model, threads->options);
  if (!session) return Fail(std::move(session.error()));
  impl->cache = &cache;
  impl->pool = std::move(threads->owned_pool);
  impl->session.emplace(std::move(*session));
  return Session(std::move(impl));
} catch (const std::bad_alloc&) {
  return Fail(HandleAllocationFailed("session"));
}

Result<Session> Session::Open(const Model& model, const SessionOptions& options) try {
  CacheOptions cache_options;
  cache_options.batch_size = options.batch_size;
  cache_options.capacity = options.capacity;
  cache_options.precision = options.engine.precision;
  cache_options.kv_type = options.engine.kv_type;
  Result<KvCache> cache = KvCache::Create(model, cache_options);
  if (!cache) return Fail(std::move(cache.error()));
  // The cache's box first: once bound, it must outlive the session, which the
  // Impl's member order guarantees.
  auto owned = std::make_unique<KvCache>(std::move(*cache));
  Result<Session> session = Bind(*owned, model, options.engine);
  if (!session) return Fail(std::move(session.error()));
  session->impl_->owned_cache = std::move(owned);
  return session;
} catch (const std::bad_alloc&) {
  return Fail(HandleAllocationFailed("session"));
}

Result<StepOutput> Session::Prefill(std::span<const uint32_t> prompt) {
  return impl_->session->Prefill(prompt);
}
Result<StepOutput> Session::Decode(uint32_t token) { return impl_->session->Decode(token); }
Result<StepOutput> Session::PrefillBatch(std::span<const uint32_t> prompts) {
  return impl_->session->PrefillBatch(prompts);
}
Result<StepOutput> Session::DecodeBatch(std::span<const uint32_t> tokens) {
  return impl_->session->DecodeBatch(tokens);
}
Result<SlotStepOutput> Session::Step(std::span<const SlotRun> runs) {
  return impl_->session->Step(runs);
}
size_t Session::max_rows_per_step() const { return impl_->session->max_rows_per_step(); }
size_t Session::max_rows_per_run() const { return impl_->session->max_rows_per_run(); }
void Session::Reset() { impl_->session->Reset(); }
Result<void> Session::ResetSlot(size_t slot) { return impl_->session->ResetSlot(slot); }
Result<void> Session::TruncateSlot(size_t slot, size_t len) {
  return impl_->session->TruncateSlot(slot, len);
}
Result<void> Session::ForkSlot(size_t source, size_t destination) {
  return impl_->session->ForkSlot(source, destination);
}
const KvCache& Session::cache() const { return *impl_->cache; }
const EngineOptions& Session::engine_options() const { return impl_->session->engine_options(); }

}  // namespace kvrt
