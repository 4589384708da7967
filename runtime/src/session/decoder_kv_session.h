// DecoderKvSession: a cache bound to one exact model (spec/kv-cache.md §3.4–3.8).
// Bind (below) makes one; the session is the only code that changes what a
// cache holds, through DecoderKvCache's session-side mutators.
//
// The session owns the state machine of every sequence slot (empty → active →
// full, plus "prompting" for a prompt fed in chunks through Step), the
// validation order of every request, the work counters and the two-phase
// commit: a step first prepares every block for all its rows (phase 1), checks
// that the cache is as it was (phase 2), and only then commits all layer caches,
// the slots' lengths and the counters together (phase 3). On any error no slot
// advances: a failed decode or step leaves the cache exactly as it was (physical
// storage included), a failed prefill leaves the empty state. The
// single-sequence calls (Prefill, Decode), the equal-length batch calls and the
// slot steps are one machine: each is a sequence of steps over slots. The engine
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
#include <vector>

#include "core/buffer.h"
#include "engine/engine.h"
#include "kv/decoder_kv_cache.h"
#include "kvrt/engine_options.h"
#include "kvrt/error.h"
#include "kvrt/steps.h"
#include "model/decoder_model.h"
#include "model/parameter_access.h"

namespace kvrt {

class DecoderKvSession;

// spec §3.3: binds `cache` to `model` with an engine. The binding checks of
// DecoderKvCache::CheckBinding, options.Validate()'s errors, UnsupportedBackend
// when the engine's precision is not the cache's, and CacheAlreadyBound when
// another session holds this cache. A rejected bind changes nothing. The session
// keeps a pointer to `cache`: the cache must outlive it and must not be moved
// while bound.
Result<DecoderKvSession> Bind(DecoderKvCache& cache, const DecoderModel& model,
                              EngineOptions options = {});

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

  // One step over any set of distinct slots: prefill chunks and decode tokens,
  // mixed. Validation, in run order (each run's own errors wrapped as
  // SlotRequest{slot}): EmptyStep; SlotOutOfRange{slot, slots}; DuplicateSlot{slot};
  // prefill runs: EmptyPrompt, PrefillRequiresEmpty{len} (the slot's prompt is
  // complete), PromptTooLong{tokens: len + chunk, capacity},
  // PromptTokenOutOfBounds{position in the slot}; decode runs: BatchShapeMismatch
  // (not one token), DecodeRequiresPrefill, DecodeTokenOutOfBounds, Full; then
  // StepTooLarge{rows, max_rows} beyond max_rows_per_step() rows in all or
  // max_rows_per_run() in one run. Then one two-phase commit for all runs: on any
  // error no slot advances and the cache equals its state before the call.
  // Slots outside the step are untouched; every slot attends only to its own rows.
  Result<SlotStepOutput> Step(std::span<const SlotRun> runs);
  size_t max_rows_per_step() const;
  size_t max_rows_per_run() const;

  // Per-slot operations; each is atomic (an error changes nothing).
  // ResetSlot: the slot to Empty, its counters zeroed (and taken out of the
  // total). SlotOutOfRange.
  Result<void> ResetSlot(size_t slot);
  // TruncateSlot: the slot keeps rows [0, len) (a rewind; its counters keep the
  // work done). len 0 is ResetSlot. SlotOutOfRange, TruncateBeyondLength{slot,
  // len, slot_len}.
  Result<void> TruncateSlot(size_t slot, size_t len);
  // ForkSlot: `destination` becomes a copy of `source`'s prefix (rows, length,
  // prompt state); its previous contents and counters are dropped (no tokens
  // were forwarded). SlotOutOfRange, ForkOntoItself{slot}.
  Result<void> ForkSlot(size_t source, size_t destination);

  const DecoderKvCache& cache() const { return *cache_; }
  const DecoderModel& model() const { return model_; }
  const EngineOptions& engine_options() const { return options_; }

 private:
  friend Result<DecoderKvSession> Bind(DecoderKvCache&, const DecoderModel&, EngineOptions);
  friend struct KvCacheTestAccess;
  DecoderKvSession(DecoderKvCache& cache, const DecoderModel& model, EngineOptions options,
                   std::unique_ptr<SharedBorrows> borrows, std::unique_ptr<detail::Engine> engine,
                   Buffer<double> logits);

  // What an uncommitted slot has gained in the steps since BeginPending.
  struct Pending {
    size_t rows = 0;
    KvWork work;                   // the slot's counters after the pending rows
    uint64_t last_row_scores = 0;  // score values of its last pending row
  };
  void BeginPending();
  // Phases 1–2 of one engine step over runs_[0, runs) (validated; each run at
  // its slot's committed length plus its pending rows), then the rows' physical
  // placement past the committed lengths, where no reader looks. Adds their work
  // to the pending counters. On error nothing the cache exposes has changed.
  Result<void> ForwardRuns(size_t runs);
  // Phase 3: every slot's pending rows and counters become visible together.
  void CommitPending();
  // Forwards validated prompts ([batch, rows]) in steps the engine accepts, then
  // commits them once: all of the prompt becomes visible, or none of it.
  Result<StepOutput> PrefillRows(std::span<const uint32_t> prompts, size_t rows);
  StepOutput BatchOutput() const;
  Result<void> CheckSlot(size_t slot) const;
  // Step's validation (session/slot_runs.cc): every run's own checks in run
  // order, then the engine's row limits; the rows of all runs on success.
  Result<size_t> CheckSlotRuns(std::span<const SlotRun> runs);
  Result<void> CheckPrefillRun(const SlotRun& run) const;
  Result<void> CheckDecodeRun(const SlotRun& run) const;

  DecoderKvCache* cache_;
  DecoderModel model_;  // a handle sharing the model's parameter nodes
  EngineOptions options_;
  std::unique_ptr<SharedBorrows> borrows_;
  std::unique_ptr<detail::Engine> engine_;
  Buffer<double> logits_;  // [batch, V], the last step's logits
  // Bookkeeping of one step, sized at bind ([batch] each): steps allocate nothing.
  std::vector<detail::EngineRun> runs_;
  std::vector<RunPhase> run_phases_;
  std::vector<Pending> pending_;
  std::vector<uint8_t> in_step_;
  KvWork pending_total_;
};

}  // namespace kvrt
