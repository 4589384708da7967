// KV caches and the sessions that decode with them (spec/kv-cache.md §3).
//
// A KvCache holds one K/V cache per decoder block for `batch_size` sequence
// slots. A Session binds a cache to one exact model: the cache records the
// model's parameters when it is created, and binds only to that model. A session
// owns the state machine of every slot (empty → prompting → active → full), the
// validation of every request, the work counters and the two-phase commit: a
// step prepares every block for all its rows, checks that the cache is as it
// was, and only then commits all layer caches, the slots' lengths and the
// counters together. On any error no slot advances: a failed call leaves the
// cache exactly as it was (a failed single-sequence prefill leaves it empty).
// Every buffer a step needs is allocated when the session opens: prefill, decode
// and reset allocate nothing.
//
// Handles are not synchronized: one session (and its cache) is used by one
// thread at a time; different sessions may run on different threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "kvrt/engine_options.h"
#include "kvrt/error.h"
#include "kvrt/model.h"
#include "kvrt/steps.h"

namespace kvrt {

class KvCache {
 public:
  struct Impl;  // the library's own state, opaque outside it

  // spec/kv-cache.md §3.1 for `model`: ZeroBatchSize, ZeroCapacity,
  // CapacityExceedsPositions, ElementCountOverflow, AllocationFailed, wrapped as
  // LayerCache{layer} for the block that failed.
  static Result<KvCache> Create(const Model& model, CacheOptions options = {});

  KvCache(KvCache&&) noexcept;
  KvCache& operator=(KvCache&&) noexcept;
  ~KvCache();
  // A deep copy of the whole state, bound to no session.
  Result<KvCache> Clone() const;

  size_t capacity() const;
  size_t slot_count() const;
  Precision precision() const;
  // The longest slot's length: the length of a single-sequence cache.
  size_t len() const;
  bool prefill_complete() const;  // every slot's prompt is complete
  bool is_bound() const;          // a session holds it
  const KvWork& work() const;     // the sum over slots
  size_t slot_len(size_t slot) const;  // 0 for an out-of-range slot
  bool slot_prefill_complete(size_t slot) const;
  KvWork slot_work(size_t slot) const;
  size_t storage_bytes() const;  // K/V bytes over all layers

  Impl& impl() { return *impl_; }
  const Impl& impl() const { return *impl_; }

 private:
  explicit KvCache(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A session that owns its cache (Session::Open).
struct SessionOptions {
  EngineOptions engine;   // the cache stores rows in the engine's precision
  size_t capacity = 0;    // 0: the model's max_positions
  size_t batch_size = 1;  // sequence slots
};

class Session {
 public:
  struct Impl;  // the library's own state, opaque outside it

  // Binds `cache` to `model` (spec §3.3): ModelConfigMismatch,
  // ModelParameterCountMismatch, ModelParameterMismatch{index},
  // ModelParameterRevisionMismatch, LayerCountMismatch, UnsupportedBackend (the
  // engine's precision is not the cache's), CacheAlreadyBound (another session
  // holds it). A rejected bind changes nothing. The cache must outlive the
  // session; dropping the session releases it.
  static Result<Session> Bind(KvCache& cache, const Model& model, const EngineOptions& engine = {});
  // A new cache of options.capacity and options.batch_size, then Bind.
  static Result<Session> Open(const Model& model, const SessionOptions& options = {});

  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  // spec §3.5, for a batch of 1: EmptyPrompt, PrefillRequiresEmpty{len},
  // PromptTooLong{tokens, capacity}, PromptTokenOutOfBounds{position, token_id,
  // vocabulary_size}; errors there change nothing. A failure while forwarding
  // leaves the cache empty.
  Result<StepOutput> Prefill(std::span<const uint32_t> prompt);
  // spec §3.6: DecodeRequiresPrefill, DecodeTokenOutOfBounds, Full{capacity}.
  Result<StepOutput> Decode(uint32_t token);
  // Batch forms for a cache of B slots: `prompts` is [B, T] row-major (one
  // length for all), `tokens` holds B ids; BatchShapeMismatch otherwise.
  Result<StepOutput> PrefillBatch(std::span<const uint32_t> prompts);
  Result<StepOutput> DecodeBatch(std::span<const uint32_t> tokens);

  // One step over any set of distinct slots: prefill chunks and decode tokens,
  // mixed. Validation in run order (each run's own errors wrapped as
  // SlotRequest{slot}): EmptyStep; SlotOutOfRange; DuplicateSlot; a prefill run's
  // EmptyPrompt, PrefillRequiresEmpty, PromptTooLong, PromptTokenOutOfBounds; a
  // decode run's BatchShapeMismatch (not one token), DecodeRequiresPrefill,
  // DecodeTokenOutOfBounds, Full; then StepTooLarge beyond max_rows_per_step()
  // rows in all or max_rows_per_run() in one run. One two-phase commit for all
  // runs. A slot's logits do not depend on the other runs, the slot or the threads.
  Result<SlotStepOutput> Step(std::span<const SlotRun> runs);
  size_t max_rows_per_step() const;
  size_t max_rows_per_run() const;

  // spec §3.8: every slot to empty, counters zeroed (allocations kept).
  void Reset();
  // One slot to empty, its counters out of the total. SlotOutOfRange.
  Result<void> ResetSlot(size_t slot);
  // The slot keeps rows [0, len) (a rewind). SlotOutOfRange,
  // TruncateBeyondLength{slot, len, slot_len}; len 0 is ResetSlot.
  Result<void> TruncateSlot(size_t slot, size_t len);
  // `destination` becomes a copy of `source`'s rows, length and prompt state.
  // SlotOutOfRange, ForkOntoItself{slot}.
  Result<void> ForkSlot(size_t source, size_t destination);

  const KvCache& cache() const;
  const EngineOptions& engine_options() const;

  Impl& impl() { return *impl_; }

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvrt
