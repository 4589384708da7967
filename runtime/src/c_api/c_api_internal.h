// The objects behind the C API's opaque handles, and the guard that turns every
// C++ failure (an Error, an exception) into a kvrt_error.
#pragma once

#include <atomic>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "kvrt/error.h"
#include "kv/decoder_kv_cache.h"
#include "kvrt/kvrt.h"
#include "formats/load_model.h"
#include "formats/llama2c/llama2c.h"
#include "model/decoder_model.h"
#include "session/decoder_kv_session.h"
#include "kvrt/threading/thread_pool.h"
#include "kvrt/sampling.h"
#include "kvrt/tokenizer.h"

struct kvrt_error {
  int code = 0;
  std::string name;
  std::string message;
};

struct kvrt_pool {
  // An arena of its own (kvrt_pool_create) or the host's (kvrt_pool_attach_current_arena).
  std::unique_ptr<kvrt::threading::ThreadPool> pool;
};

struct kvrt_model {
  kvrt::DecoderModel model;
  std::optional<kvrt::Tokenizer> tokenizer;
  kvrt::ModelFormat format = kvrt::ModelFormat::kLlmcp35;
};

struct kvrt_cache {
  // Shared with the sessions bound to it, which must not outlive the cache.
  std::shared_ptr<kvrt::DecoderKvCache> cache;
};

struct kvrt_session {
  // Set while a call is inside the session (SessionEntry): a second thread
  // entering at the same time gets ConcurrentUse instead of sharing the state.
  std::atomic<bool> busy{false};
  // Destroyed in reverse order: the session, then its pool, its model handle
  // and its cache. The engines keep the address of the model handle given to
  // Bind, so the session binds this copy, which lives exactly as long.
  std::shared_ptr<kvrt::DecoderKvCache> cache;
  std::optional<kvrt::DecoderModel> model;
  std::unique_ptr<kvrt::threading::ThreadPool> pool;
  std::optional<kvrt::DecoderKvSession> session;
  std::vector<float> logits_f32;  // what the _f32 calls hand out
  std::vector<kvrt::SlotRun> runs;  // kvrt_session_step's runs, grown once
};

namespace kvrt::c_api {

kvrt_error* MakeError(const Error& error);
kvrt_error* InvalidArgument(const std::string& message);

// One C call's claim on a handle that holds mutable state (a session, a
// sampler). The handles are not synchronized, and two threads inside one session
// corrupted it (SIGSEGV); the claim is one atomic exchange per call, so misuse is
// detected for the price of an uncontended atomic: the claim fails while another
// call holds the handle, and that call returns ConcurrentUse without touching it.
// Acquire/release order one call's writes before the next call's reads,
// whichever thread makes it.
class HandleEntry {
 public:
  explicit HandleEntry(std::atomic<bool>& busy)
      : busy_(busy), entered_(!busy.exchange(true, std::memory_order_acquire)) {}
  HandleEntry(const HandleEntry&) = delete;
  HandleEntry& operator=(const HandleEntry&) = delete;
  ~HandleEntry() {
    if (entered_) busy_.store(false, std::memory_order_release);
  }
  bool entered() const { return entered_; }

 private:
  std::atomic<bool>& busy_;
  bool entered_;
};

class SessionEntry : public HandleEntry {
 public:
  explicit SessionEntry(kvrt_session& session) : HandleEntry(session.busy) {}
};

// ConcurrentUse naming the C function that found the handle in use.
kvrt_error* ConcurrentUse(const char* function);

// Runs `body` (returning kvrt_error*), mapping exceptions to errors: an
// allocation failure to AllocationFailed, anything else to InvariantViolation.
template <class Body>
kvrt_error* Guard(Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return MakeError(Error(ErrorCode::kAllocationFailed, {}, "out of memory"));
  } catch (const std::exception& exception) {
    return MakeError(Error(ErrorCode::kInvariantViolation, {}, exception.what()));
  } catch (...) {
    return MakeError(Error(ErrorCode::kInvariantViolation, {}, "unknown exception"));
  }
}

// The sampler set of C parameters (kvrt/kvrt.h: zero is off). InvalidArgument
// for a bias list without entries.
struct SamplerSettings {
  SamplingMode mode;
  SamplerOptions options;
};
Result<SamplerSettings> SamplerFromC(const kvrt_sampler_params& params);

// The EngineOptions of `engine` (NULL: the defaults): on the caller's shared
// kvrt_pool when it names one, else with a pool of its own in `pool` when the
// fast backend runs on more than the calling thread.
Result<EngineOptions> EngineFromC(const kvrt_engine_options* engine,
                                  std::unique_ptr<threading::ThreadPool>& pool);

// The same options checked for what does not depend on threads (precision,
// weights, KV type), with no pool started: for calls that only prepare or size.
Result<EngineOptions> EngineFromCWithoutPool(const kvrt_engine_options* engine);

}  // namespace kvrt::c_api
