// DecoderKvSession: a cache bound to one exact model (spec/kv-cache.md §3.4–3.8).
//
// The session owns the state machine (empty → active → full), the validation
// order of every request, the work counters and the two-phase commit: a token
// step first prepares every block (phase 1), checks that the cache is as it was
// (phase 2), and only then commits all layer caches, the length and the counters
// together (phase 3). On any error no layer advances: a failed decode leaves the
// cache exactly as it was, a failed prefill leaves the empty state. The engine
// chosen at bind (reference or fast) only does the arithmetic.
//
// While a session lives it holds a shared borrow of every model parameter, so
// parameter updates are refused, and it holds its cache exclusively. The session
// is move-only; dropping it releases both. All buffers a step needs are allocated
// at bind: Prefill/Decode/Reset allocate nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "kvrt/buffer.h"
#include "kvrt/engine_options.h"
#include "kvrt/error.h"
#include "kvrt/kv_cache.h"
#include "kvrt/model.h"
#include "kvrt/parameter.h"

namespace kvrt {

class SharedBorrows;

namespace detail {
class Engine;
struct KvCacheTestAccess;
}  // namespace detail

// What one committed prefill or decode returns. `logits` ([batch, V], f64) points
// into the session's workspace and stays valid until the next call on the session.
struct StepOutput {
  std::span<const double> logits;
  size_t position = 0;                  // position of the last row forwarded
  size_t cache_len = 0;                 // len after the commit
  uint64_t attention_score_values = 0;  // score values of the last row only
};

class DecoderKvSession {
 public:
  DecoderKvSession(DecoderKvSession&&) noexcept;
  DecoderKvSession& operator=(DecoderKvSession&&) noexcept;
  DecoderKvSession(const DecoderKvSession&) = delete;
  DecoderKvSession& operator=(const DecoderKvSession&) = delete;
  ~DecoderKvSession();

  // spec §3.5, for a batch of 1: EmptyPrompt, PrefillRequiresEmpty{len},
  // PromptTooLong{tokens, capacity}, PromptTokenOutOfBounds{position, token_id,
  // vocabulary_size}; errors there change nothing. A failure while forwarding
  // resets the cache to the empty state (work zeroed) and returns the error.
  Result<StepOutput> Prefill(std::span<const uint32_t> prompt);
  // spec §3.6: DecodeRequiresPrefill, DecodeTokenOutOfBounds, Full{capacity};
  // any failure leaves the state exactly as before.
  Result<StepOutput> Decode(uint32_t token);

  // Batch forms for a cache of B sequences: `prompts` is [B, T] row-major (all
  // sequences share one length), `tokens` holds B ids. Same validation and
  // commit rules, one commit per step for all sequences and blocks; a length
  // that is not a multiple of B gives BatchShapeMismatch.
  Result<StepOutput> PrefillBatch(std::span<const uint32_t> prompts);
  Result<StepOutput> DecodeBatch(std::span<const uint32_t> tokens);

  // spec §3.8: every layer to length 0 (allocations and stale rows kept),
  // prefill_complete cleared, counters zeroed; bindings and borrows kept.
  void Reset();

  const DecoderKvCache& cache() const { return *cache_; }
  const DecoderModel& model() const { return model_; }
  const EngineOptions& engine_options() const { return options_; }

 private:
  friend class DecoderKvCache;
  friend struct detail::KvCacheTestAccess;
  DecoderKvSession(DecoderKvCache& cache, const DecoderModel& model, EngineOptions options,
                   std::unique_ptr<SharedBorrows> borrows, std::unique_ptr<detail::Engine> engine,
                   Buffer<double> logits);

  enum class Phase { kPrefill, kDecode };
  // Phases 1–2 of an engine step of `rows` rows per sequence at position `start`
  // (>= cache.len(): a chunk of a prefill sits on the uncommitted rows of the
  // chunks before it); row r of sequence b is tokens[b·token_stride + r]. Adds
  // the rows' work to `work`; changes nothing the cache exposes.
  Result<void> PrepareRows(std::span<const uint32_t> tokens, size_t token_stride, size_t start,
                           size_t rows, Phase phase, KvWork& work, uint64_t& last_row_scores);
  // Phase 3: the first `rows` rows past the committed length, their work and
  // the logits of the last prepared step become visible together.
  StepOutput CommitRows(size_t rows, const KvWork& work, uint64_t last_row_scores);
  // Forwards validated prompts ([batch, rows]) in steps the engine accepts, then
  // commits them once: all of the prompt becomes visible, or none of it.
  Result<StepOutput> PrefillRows(std::span<const uint32_t> prompts, size_t rows);
  void ResetState();

  DecoderKvCache* cache_;
  DecoderModel model_;  // a handle sharing the model's parameter nodes
  EngineOptions options_;
  std::unique_ptr<SharedBorrows> borrows_;  // model/parameter_access.h
  std::unique_ptr<detail::Engine> engine_;
  Buffer<double> logits_;  // [batch, V], the last step's logits
};

// A session that owns its cache, for embedders who do not manage caches
// themselves. The precision is chosen once, in options.engine: the cache stores
// rows in the engine's precision. (The explicit path, DecoderKvCache::Create then
// cache.Bind(model, engine), is the specification's and stays available.)
struct SessionOptions {
  EngineOptions engine;   // default: the fast f32 engine
  size_t capacity = 0;    // 0: the model's max_positions
  size_t batch_size = 1;  // sequences that advance together
};

class Session {
 public:
  // DecoderKvCache::Create's errors, then Bind's.
  static Result<Session> Open(const DecoderModel& model, SessionOptions options = {});

  Result<StepOutput> Prefill(std::span<const uint32_t> prompt) { return session_->Prefill(prompt); }
  Result<StepOutput> Decode(uint32_t token) { return session_->Decode(token); }
  void Reset() { session_->Reset(); }

  const DecoderKvCache& cache() const { return *cache_; }
  DecoderKvSession& session() { return *session_; }

 private:
  Session(std::unique_ptr<DecoderKvCache> cache, std::unique_ptr<DecoderKvSession> session)
      : cache_(std::move(cache)), session_(std::move(session)) {}
  // Destroyed in reverse order: the session releases the cache before it goes.
  std::unique_ptr<DecoderKvCache> cache_;  // heap: the session keeps its address
  std::unique_ptr<DecoderKvSession> session_;
};

}  // namespace kvrt
