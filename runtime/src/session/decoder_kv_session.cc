#include "session/decoder_kv_session.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "core/checked_math.h"
#include "engine/engine.h"
#include "engine/fast/fast_engine.h"
#include "model/parameter_access.h"

namespace kvrt {
namespace {

std::string Count(uint64_t n) { return std::to_string(n); }

Error WorkOverflow(const char* counter) {
  return Error(ErrorCode::kWorkOverflow, {{"counter", Identifier{counter}}},
               std::string("decoder KV cache work counter ") + counter + " overflowed");
}

// Steps allocate nothing on success; only building an error's message does.
// Running out of memory there must not throw out of the session either.
Error StepAllocationFailed() {
  return Error(ErrorCode::kAllocationFailed, {}, "could not allocate the session's error report");
}

// Adds `amount` to `counter`, or names the counter that would overflow.
bool CheckedIncrement(uint64_t& counter, uint64_t amount) {
  return !__builtin_add_overflow(counter, amount, &counter);
}

}  // namespace

DecoderKvSession::DecoderKvSession(DecoderKvCache& cache, const DecoderModel& model,
                                   EngineOptions options, std::unique_ptr<SharedBorrows> borrows,
                                   std::unique_ptr<detail::Engine> engine, Buffer<double> logits)
    : cache_(&cache),
      model_(model),
      options_(options),
      borrows_(std::move(borrows)),
      engine_(std::move(engine)),
      logits_(std::move(logits)),
      runs_(cache.batch_size()),
      run_phases_(cache.batch_size()),
      pending_(cache.batch_size()),
      in_step_(cache.batch_size()) {}

DecoderKvSession::DecoderKvSession(DecoderKvSession&& other) noexcept
    : cache_(std::exchange(other.cache_, nullptr)),
      model_(std::move(other.model_)),
      options_(other.options_),
      borrows_(std::move(other.borrows_)),
      engine_(std::move(other.engine_)),
      logits_(std::move(other.logits_)),
      runs_(std::move(other.runs_)),
      run_phases_(std::move(other.run_phases_)),
      pending_(std::move(other.pending_)),
      in_step_(std::move(other.in_step_)) {}

DecoderKvSession& DecoderKvSession::operator=(DecoderKvSession&& other) noexcept {
  if (this != &other) {
    if (cache_ != nullptr) cache_->Release();
    cache_ = std::exchange(other.cache_, nullptr);
    model_ = std::move(other.model_);
    options_ = other.options_;
    borrows_ = std::move(other.borrows_);
    engine_ = std::move(other.engine_);
    logits_ = std::move(other.logits_);
    runs_ = std::move(other.runs_);
    run_phases_ = std::move(other.run_phases_);
    pending_ = std::move(other.pending_);
    in_step_ = std::move(other.in_step_);
  }
  return *this;
}

DecoderKvSession::~DecoderKvSession() {
  if (cache_ != nullptr) cache_->Release();
}

Result<StepOutput> DecoderKvSession::Prefill(std::span<const uint32_t> prompt) {
  return PrefillBatch(prompt);
}

Result<StepOutput> DecoderKvSession::Decode(uint32_t token) {
  return DecodeBatch(std::span<const uint32_t>(&token, 1));
}

size_t DecoderKvSession::max_rows_per_step() const { return engine_->max_rows_per_step(); }
size_t DecoderKvSession::max_rows_per_run() const { return engine_->max_rows_per_run(); }

Result<StepOutput> DecoderKvSession::PrefillBatch(std::span<const uint32_t> prompts) try {
  const DecoderKvCache& cache = *cache_;
  const size_t batch = cache.batch_size();
  const size_t vocabulary = cache.config().vocabulary_size;
  if (prompts.empty())
    return Fail(ErrorCode::kEmptyPrompt, {}, "cached prefill needs a nonempty prompt");
  if (prompts.size() % batch != 0) {
    return Fail(ErrorCode::kBatchShapeMismatch,
                {{"batch_size", uint64_t{batch}}, {"tokens", uint64_t{prompts.size()}}},
                "cached prefill of " + Count(prompts.size()) + " tokens cannot be split into " +
                    Count(batch) + " equal prompts");
  }
  for (size_t s = 0; s < batch; ++s) {
    if (cache.slot_len(s) != 0 || cache.slot_prefill_complete(s)) {
      return Fail(
          ErrorCode::kPrefillRequiresEmpty, {{"len", uint64_t{cache.len()}}},
          "cached prefill requires empty state, but the cache length is " + Count(cache.len()));
    }
  }
  const size_t rows = prompts.size() / batch;
  if (rows > cache.capacity()) {
    return Fail(ErrorCode::kPromptTooLong,
                {{"tokens", uint64_t{rows}}, {"capacity", uint64_t{cache.capacity()}}},
                "cached prefill has " + Count(rows) + " prompt tokens, exceeding capacity " +
                    Count(cache.capacity()));
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (prompts[i] >= vocabulary) {
      return Fail(ErrorCode::kPromptTokenOutOfBounds,
                  {{"position", uint64_t{i}},
                   {"token_id", uint64_t{prompts[i]}},
                   {"vocabulary_size", uint64_t{vocabulary}}},
                  "cached prefill token " + Count(prompts[i]) + " at position " + Count(i) +
                      " is out of bounds for vocabulary " + Count(vocabulary));
    }
  }
  return PrefillRows(prompts, rows);
} catch (const std::bad_alloc&) {
  return Fail(StepAllocationFailed());  // a request error's message: nothing changed
}

Result<StepOutput> DecoderKvSession::PrefillRows(std::span<const uint32_t> prompts, size_t rows) {
  // Every sequence's prompt goes in chunks of `chunk` rows, all sequences in one
  // engine step per chunk (the engine takes at least one row per slot). Every
  // chunk forwards on top of the rows of the chunks before it, which the step
  // placed past the committed length where no reader of the cache looks; the
  // lengths and the counters advance once, after the last chunk. A failure in
  // any chunk leaves the cache empty as it was (stale rows past the length stay,
  // as after any failed step). rows >= 1 (validated).
  const size_t batch = cache_->batch_size();
  const size_t chunk = std::max<size_t>(
      1, std::min(engine_->max_rows_per_run(), engine_->max_rows_per_step() / batch));
  BeginPending();
  for (size_t first = 0; first < rows; first += chunk) {
    const size_t count = std::min(chunk, rows - first);
    for (size_t b = 0; b < batch; ++b) {
      runs_[b].slot = b;
      runs_[b].start = first;
      runs_[b].count = count;
      runs_[b].tokens = prompts.data() + b * rows + first;
      run_phases_[b] = RunPhase::kPrefill;
    }
    Result<void> forwarded = ForwardRuns(batch);
    if (!forwarded) return Fail(std::move(forwarded.error()));
  }
  CommitPending();
  for (size_t b = 0; b < batch; ++b) cache_->MarkPromptComplete(b);
  return BatchOutput();
}

Result<StepOutput> DecoderKvSession::DecodeBatch(std::span<const uint32_t> tokens) try {
  const DecoderKvCache& cache = *cache_;
  const size_t batch = cache.batch_size();
  const size_t vocabulary = cache.config().vocabulary_size;
  for (size_t s = 0; s < batch; ++s) {
    if (!cache.slot_prefill_complete(s) || cache.slot_len(s) == 0) {
      return Fail(ErrorCode::kDecodeRequiresPrefill, {},
                  "cached decode requires one completed nonempty prompt prefill");
    }
  }
  if (tokens.size() != batch) {
    return Fail(ErrorCode::kBatchShapeMismatch,
                {{"batch_size", uint64_t{batch}}, {"tokens", uint64_t{tokens.size()}}},
                "cached decode needs one token per sequence (" + Count(batch) + "), got " +
                    Count(tokens.size()));
  }
  for (uint32_t token : tokens) {
    if (token >= vocabulary) {
      return Fail(ErrorCode::kDecodeTokenOutOfBounds,
                  {{"token_id", uint64_t{token}}, {"vocabulary_size", uint64_t{vocabulary}}},
                  "cached decode token " + Count(token) + " is out of bounds for vocabulary " +
                      Count(vocabulary));
    }
  }
  for (size_t s = 0; s < batch; ++s) {
    if (cache.slot_len(s) == cache.capacity()) {
      return Fail(ErrorCode::kFull, {{"capacity", uint64_t{cache.capacity()}}},
                  "decoder KV cache is full at capacity " + Count(cache.capacity()));
    }
  }
  BeginPending();
  for (size_t b = 0; b < batch; ++b) {
    runs_[b].slot = b;
    runs_[b].start = cache.slot_len(b);
    runs_[b].count = 1;
    runs_[b].tokens = tokens.data() + b;
    run_phases_[b] = RunPhase::kDecode;
  }
  Result<void> forwarded = ForwardRuns(batch);
  if (!forwarded) return Fail(std::move(forwarded.error()));
  CommitPending();
  return BatchOutput();
} catch (const std::bad_alloc&) {
  return Fail(StepAllocationFailed());  // Step commits only after its last check
}

Result<SlotStepOutput> DecoderKvSession::Step(std::span<const SlotRun> runs) try {
  Result<size_t> valid = CheckSlotRuns(runs);
  if (!valid) return Fail(std::move(valid.error()));
  BeginPending();
  for (size_t r = 0; r < runs.size(); ++r) {
    runs_[r].slot = runs[r].slot;
    runs_[r].start = cache_->slot_len(runs[r].slot);
    runs_[r].count = runs[r].tokens.size();
    runs_[r].tokens = runs[r].tokens.data();
    run_phases_[r] = runs[r].phase;
  }
  Result<void> forwarded = ForwardRuns(runs.size());
  if (!forwarded) return Fail(std::move(forwarded.error()));
  CommitPending();
  for (const SlotRun& run : runs) {
    if (run.phase == RunPhase::kPrefill && run.completes_prompt) cache_->MarkPromptComplete(run.slot);
  }
  SlotStepOutput output;
  output.logits = std::span<const double>(logits_.data(), runs.size() * cache_->config().vocabulary_size);
  output.runs = runs.size();
  return output;
} catch (const std::bad_alloc&) {
  return Fail(StepAllocationFailed());  // only error messages allocate; nothing changed
}

void DecoderKvSession::BeginPending() {
  for (size_t s = 0; s < pending_.size(); ++s) pending_[s] = {0, cache_->slot_work(s), 0};
  pending_total_ = cache_->work();
}

Result<void> DecoderKvSession::ForwardRuns(size_t run_count) {
  DecoderKvCache& cache = *cache_;
  const ModelConfig& config = cache.config();
  const std::span<LayerKvCache> layers = cache.layers();
  const std::span<const detail::EngineRun> runs(runs_.data(), run_count);
  detail::EngineStep step;
  step.runs = runs;
  for (const detail::EngineRun& run : runs) step.rows += run.count;

  // Phase 0: the pages the rows go to, backed with memory before the engine
  // writes them (DecoderKvCache::BackRows); nothing the cache exposes changes.
  for (const detail::EngineRun& run : runs) {
    if (Result<void> backed = cache.BackRows(run.slot, run.start, run.start + run.count); !backed) {
      return Fail(std::move(backed.error()));
    }
  }

  // Phase 1: prepare every block for all rows; nothing the cache exposes changes.
  std::span<double> logits(logits_.data(), cache.batch_size() * config.vocabulary_size);
  if (Result<void> prepared = engine_->Prepare(step, layers, logits); !prepared) {
    return Fail(std::move(prepared.error()));
  }

  // Phase 2: side-effect-free checks. The engine must have left every layer where
  // it was, and the counters must not overflow.
  for (size_t l = 0; l < layers.size(); ++l) {
    for (size_t s = 0; s < cache.slot_count(); ++s) {
      if (layers[l].slot_len(s) != cache.slot_len(s)) {
        return Fail(ErrorCode::kPreparedCacheChanged, {{"layer", uint64_t{l}}},
                    "layer cache " + Count(l) + " changed while a token step was prepared");
      }
    }
  }
  uint64_t qkv_per_token = 0;
  if (__builtin_mul_overflow(uint64_t{3}, uint64_t{config.layers}, &qkv_per_token)) {
    return Fail(WorkOverflow("QkvProjectionRows"));
  }
  KvWork total = pending_total_;
  for (size_t r = 0; r < run_count; ++r) {
    const detail::EngineRun& run = runs[r];
    const bool prefill = run_phases_[r] == RunPhase::kPrefill;
    KvWork slot = pending_[run.slot].work;
    size_t end = 0;
    if (__builtin_add_overflow(run.start, run.count, &end)) return Fail(WorkOverflow("TokenForwards"));
    uint64_t row_scores = 0;
    for (size_t i = 0; i < run.count; ++i) {
      // Every row counts as the serial reference would count it.
      const bool scores_ok = !__builtin_mul_overflow(uint64_t{config.layers} * config.heads,
                                                     uint64_t{run.start + i + 1}, &row_scores);
      for (KvWork* work : {&total, &slot}) {
        if (!CheckedIncrement(work->token_forwards, 1)) return Fail(WorkOverflow("TokenForwards"));
        if (!CheckedIncrement(work->prefill_tokens, prefill ? 1 : 0)) {
          return Fail(WorkOverflow("PrefillTokens"));
        }
        if (!CheckedIncrement(work->decode_tokens, prefill ? 0 : 1)) {
          return Fail(WorkOverflow("DecodeTokens"));
        }
        if (!CheckedIncrement(work->cache_appends, config.layers)) {
          return Fail(WorkOverflow("CacheAppends"));
        }
        if (!CheckedIncrement(work->qkv_projection_rows, qkv_per_token)) {
          return Fail(WorkOverflow("QkvProjectionRows"));
        }
        if (!scores_ok || !CheckedIncrement(work->attention_score_values, row_scores)) {
          return Fail(WorkOverflow("AttentionScoreValues"));
        }
      }
    }
    pending_[run.slot].work = slot;  // stays pending: only CommitPending publishes it
    pending_[run.slot].last_row_scores = row_scores;
  }

  // The rows go to their slots past the committed lengths. They stay invisible:
  // the lengths are unchanged until CommitPending, and a later chunk of the same
  // prompt reads them from the slots.
  engine_->Commit(step, layers);
  for (const detail::EngineRun& run : runs) pending_[run.slot].rows += run.count;
  pending_total_ = total;
  return {};
}

void DecoderKvSession::CommitPending() {
  DecoderKvCache& cache = *cache_;
  for (size_t s = 0; s < pending_.size(); ++s) {
    // Lengths were checked by ForwardRuns: slot_len + rows <= capacity.
    cache.CommitSlot(s, cache.slot_len(s) + pending_[s].rows, pending_[s].work);
  }
  cache.CommitTotal(pending_total_);
}

StepOutput DecoderKvSession::BatchOutput() const {
  const DecoderKvCache& cache = *cache_;
  StepOutput output;
  output.logits = std::span<const double>(logits_.data(),
                                          cache.batch_size() * cache.config().vocabulary_size);
  output.cache_len = cache.len();
  output.position = output.cache_len - 1;
  for (const Pending& pending : pending_) output.attention_score_values += pending.last_row_scores;
  return output;
}

void DecoderKvSession::Reset() { cache_->Clear(); }

Result<void> DecoderKvSession::CheckSlot(size_t slot) const {
  if (slot < cache_->slot_count()) return {};
  return Fail(ErrorCode::kSlotOutOfRange,
              {{"slot", uint64_t{slot}}, {"slots", uint64_t{cache_->slot_count()}}},
              "slot " + Count(slot) + " is out of range for a cache of " +
                  Count(cache_->slot_count()) + " slots");
}

Result<void> DecoderKvSession::ResetSlot(size_t slot) {
  if (Result<void> in_range = CheckSlot(slot); !in_range) return in_range;
  cache_->ClearSlot(slot);
  return {};
}

Result<void> DecoderKvSession::TruncateSlot(size_t slot, size_t len) {
  if (Result<void> in_range = CheckSlot(slot); !in_range) return in_range;
  const size_t slot_len = cache_->slot_len(slot);
  if (len > slot_len) {
    return Fail(ErrorCode::kTruncateBeyondLength,
                {{"slot", uint64_t{slot}}, {"len", uint64_t{len}}, {"slot_len", uint64_t{slot_len}}},
                "cannot truncate slot " + Count(slot) + " of length " + Count(slot_len) +
                    " to length " + Count(len));
  }
  if (len == 0) return ResetSlot(slot);
  cache_->TruncateSlot(slot, len);
  return {};
}

Result<void> DecoderKvSession::ForkSlot(size_t source, size_t destination) {
  if (Result<void> in_range = CheckSlot(source); !in_range) return in_range;
  if (Result<void> in_range = CheckSlot(destination); !in_range) return in_range;
  if (source == destination) {
    return Fail(ErrorCode::kForkOntoItself, {{"slot", uint64_t{source}}},
                "cannot fork slot " + Count(source) + " onto itself");
  }
  cache_->ForkSlot(source, destination);
  return {};
}

}  // namespace kvrt
