// Validation of a step over slots (DecoderKvSession::Step), before anything is
// forwarded: each run's own checks in run order, wrapped as SlotRequest{slot},
// then the engine's row limits.
#include <algorithm>
#include <string>

#include "session/decoder_kv_session.h"

namespace kvrt {
namespace {

std::string Count(uint64_t n) { return std::to_string(n); }

Error InSlot(Error inner, size_t slot) {
  std::string message = "slot " + std::to_string(slot) + ": " + inner.message();
  return std::move(inner).Wrap(ErrorCode::kSlotRequest, {{"slot", uint64_t{slot}}},
                               std::move(message));
}

}  // namespace

Result<size_t> DecoderKvSession::CheckSlotRuns(std::span<const SlotRun> runs) {
  if (runs.empty()) return Fail(ErrorCode::kEmptyStep, {}, "a step needs at least one slot run");
  std::fill(in_step_.begin(), in_step_.end(), uint8_t{0});
  size_t rows = 0, longest = 0;
  for (const SlotRun& run : runs) {
    if (Result<void> in_range = CheckSlot(run.slot); !in_range) return Fail(std::move(in_range.error()));
    if (in_step_[run.slot] != 0) {
      return Fail(ErrorCode::kDuplicateSlot, {{"slot", uint64_t{run.slot}}},
                  "slot " + Count(run.slot) + " appears twice in one step");
    }
    in_step_[run.slot] = 1;
    Result<void> valid = run.phase == RunPhase::kPrefill ? CheckPrefillRun(run) : CheckDecodeRun(run);
    if (!valid) return Fail(InSlot(std::move(valid.error()), run.slot));
    rows += run.tokens.size();  // each <= capacity, at most `slots` runs: no overflow
    longest = std::max(longest, run.tokens.size());
  }
  const bool run_limit = longest > engine_->max_rows_per_run();
  if (run_limit || rows > engine_->max_rows_per_step()) {
    const size_t limit = run_limit ? engine_->max_rows_per_run() : engine_->max_rows_per_step();
    const size_t too_many = run_limit ? longest : rows;
    return Fail(ErrorCode::kStepTooLarge,
                {{"rows", uint64_t{too_many}}, {"max_rows", uint64_t{limit}}},
                "a step of " + Count(too_many) + (run_limit ? " rows in one run" : " rows") +
                    " exceeds the engine's limit of " + Count(limit));
  }
  return rows;
}

Result<void> DecoderKvSession::CheckPrefillRun(const SlotRun& run) const {
  const DecoderKvCache& cache = *cache_;
  const size_t len = cache.slot_len(run.slot), n = run.tokens.size();
  if (n == 0) return Fail(ErrorCode::kEmptyPrompt, {}, "cached prefill needs a nonempty prompt");
  if (cache.slot_prefill_complete(run.slot)) {
    return Fail(ErrorCode::kPrefillRequiresEmpty, {{"len", uint64_t{len}}},
                "cached prefill requires empty state, but the slot length is " + Count(len));
  }
  if (n > cache.capacity() - len) {
    return Fail(ErrorCode::kPromptTooLong,
                {{"tokens", uint64_t{len + n}}, {"capacity", uint64_t{cache.capacity()}}},
                "cached prefill has " + Count(len + n) + " prompt tokens, exceeding capacity " +
                    Count(cache.capacity()));
  }
  const size_t vocabulary = cache.config().vocabulary_size;
  for (size_t i = 0; i < n; ++i) {
    if (run.tokens[i] < vocabulary) continue;
    const size_t position = len + i;
    return Fail(ErrorCode::kPromptTokenOutOfBounds,
                {{"position", uint64_t{position}},
                 {"token_id", uint64_t{run.tokens[i]}},
                 {"vocabulary_size", uint64_t{vocabulary}}},
                "cached prefill token " + Count(run.tokens[i]) + " at position " + Count(position) +
                    " is out of bounds for vocabulary " + Count(vocabulary));
  }
  return {};
}

Result<void> DecoderKvSession::CheckDecodeRun(const SlotRun& run) const {
  const DecoderKvCache& cache = *cache_;
  const size_t n = run.tokens.size();
  if (n != 1) {
    return Fail(ErrorCode::kBatchShapeMismatch, {{"batch_size", uint64_t{1}}, {"tokens", uint64_t{n}}},
                "a decode run takes one token, got " + Count(n));
  }
  if (!cache.slot_prefill_complete(run.slot) || cache.slot_len(run.slot) == 0) {
    return Fail(ErrorCode::kDecodeRequiresPrefill, {},
                "cached decode requires one completed nonempty prompt prefill");
  }
  const size_t vocabulary = cache.config().vocabulary_size;
  if (run.tokens[0] >= vocabulary) {
    return Fail(ErrorCode::kDecodeTokenOutOfBounds,
                {{"token_id", uint64_t{run.tokens[0]}}, {"vocabulary_size", uint64_t{vocabulary}}},
                "cached decode token " + Count(run.tokens[0]) + " is out of bounds for vocabulary " +
                    Count(vocabulary));
  }
  if (cache.slot_len(run.slot) == cache.capacity()) {
    return Fail(ErrorCode::kFull, {{"capacity", uint64_t{cache.capacity()}}},
                "decoder KV cache is full at capacity " + Count(cache.capacity()));
  }
  return {};
}

}  // namespace kvrt
