#include "kvrt/session.h"

#include <algorithm>
#include <atomic>
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

Result<DecoderKvSession> DecoderKvCache::Bind(const DecoderModel& model,
                                               EngineOptions options) try {
  // Claim the cache first, atomically: of any number of threads binding one free
  // cache, exactly one gets past this line. Every failure below frees it again.
  bool expected = false;
  if (!bound_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
    return Fail(ErrorCode::kCacheAlreadyBound, {},
                "decoder KV cache is already bound to a live session");
  }
  struct Claim {
    std::atomic<bool>& bound;
    bool kept = false;
    ~Claim() {
      if (!kept) bound.store(false, std::memory_order_release);
    }
  } claim{bound_};
  // Borrow first, then check: a concurrent update cannot slip in between the
  // revision check and the borrow. A rejected bind releases the borrows again.
  std::unique_ptr<SharedBorrows> borrows;
  try {
    borrows = std::make_unique<SharedBorrows>(model.parameters());
  } catch (const std::bad_alloc&) {
    return Fail(ErrorCode::kParameterAllocationFailed,
                {{"parameters", uint64_t{model.parameters().size()}}},
                "could not allocate " + Count(model.parameters().size()) + " parameter entries");
  }
  if (Result<void> bindable = CheckBinding(model); !bindable) return Fail(std::move(bindable.error()));
  if (Result<void> valid = options.Validate(); !valid) return Fail(std::move(valid.error()));
  if (options.precision != precision_) {
    return Fail(
        ErrorCode::kUnsupportedBackend, {{"", std::string(PrecisionName(options.precision))}},
        "the cache stores " + std::string(PrecisionName(precision_)) +
            " rows but the engine computes in " + std::string(PrecisionName(options.precision)));
  }
  Result<std::unique_ptr<detail::Engine>> engine =
      Fail(ErrorCode::kUnsupportedBackend, {{"", std::string(BackendName(options.backend))}},
           "backend " + std::string(BackendName(options.backend)) + " is not available");
  if (options.backend == Backend::kReference) engine = detail::CreateReferenceEngine(model, *this, options.weights);
  if (options.backend == Backend::kFast) engine = detail::CreateFastEngine(model, *this, options);
  if (!engine) return Fail(std::move(engine.error()));
  std::optional<Buffer<double>> logits =
      Buffer<double>::Allocate(batch_size_ * model.config().vocabulary_size);
  if (!logits) {
    return Fail(ErrorCode::kAllocationFailed,
                {{"elements", uint64_t{batch_size_ * model.config().vocabulary_size}}},
                "could not allocate the session's logits");
  }
  // Mark the cache bound only once the session exists: building it copies the
  // model handle, which can fail, and a failed bind must leave the cache free.
  DecoderKvSession session(*this, model, options, std::move(borrows), std::move(*engine),
                           std::move(*logits));
  claim.kept = true;
  return session;
} catch (const std::bad_alloc&) {
  // An engine's bookkeeping (vectors, the engine object) or the session's model
  // handle; every buffer is allocated without throwing. Nothing was bound.
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the session's engine");
}


DecoderKvSession::DecoderKvSession(DecoderKvCache& cache, const DecoderModel& model,
                                   EngineOptions options, std::unique_ptr<SharedBorrows> borrows,
                                   std::unique_ptr<detail::Engine> engine, Buffer<double> logits)
    : cache_(&cache),
      model_(model),
      options_(options),
      borrows_(std::move(borrows)),
      engine_(std::move(engine)),
      logits_(std::move(logits)) {}

DecoderKvSession::DecoderKvSession(DecoderKvSession&& other) noexcept
    : cache_(std::exchange(other.cache_, nullptr)),
      model_(std::move(other.model_)),
      options_(other.options_),
      borrows_(std::move(other.borrows_)),
      engine_(std::move(other.engine_)),
      logits_(std::move(other.logits_)) {}

DecoderKvSession& DecoderKvSession::operator=(DecoderKvSession&& other) noexcept {
  if (this != &other) {
    if (cache_ != nullptr) cache_->bound_.store(false, std::memory_order_release);
    cache_ = std::exchange(other.cache_, nullptr);
    model_ = std::move(other.model_);
    options_ = other.options_;
    borrows_ = std::move(other.borrows_);
    engine_ = std::move(other.engine_);
    logits_ = std::move(other.logits_);
  }
  return *this;
}

DecoderKvSession::~DecoderKvSession() {
  if (cache_ != nullptr) cache_->bound_.store(false, std::memory_order_release);
}

Result<StepOutput> DecoderKvSession::Prefill(std::span<const uint32_t> prompt) {
  return PrefillBatch(prompt);
}

Result<StepOutput> DecoderKvSession::Decode(uint32_t token) {
  return DecodeBatch(std::span<const uint32_t>(&token, 1));
}

Result<StepOutput> DecoderKvSession::PrefillBatch(std::span<const uint32_t> prompts) try {
  DecoderKvCache& cache = *cache_;
  const size_t batch = cache.batch_size_;
  const size_t vocabulary = cache.config_.vocabulary_size;
  if (prompts.empty())
    return Fail(ErrorCode::kEmptyPrompt, {}, "cached prefill needs a nonempty prompt");
  if (prompts.size() % batch != 0) {
    return Fail(ErrorCode::kBatchShapeMismatch,
                {{"batch_size", uint64_t{batch}}, {"tokens", uint64_t{prompts.size()}}},
                "cached prefill of " + Count(prompts.size()) + " tokens cannot be split into " +
                    Count(batch) + " equal prompts");
  }
  if (cache.len_ != 0 || cache.prefill_complete_) {
    return Fail(
        ErrorCode::kPrefillRequiresEmpty, {{"len", uint64_t{cache.len_}}},
        "cached prefill requires empty state, but the cache length is " + Count(cache.len_));
  }
  const size_t rows = prompts.size() / batch;
  if (rows > cache.capacity_) {
    return Fail(ErrorCode::kPromptTooLong,
                {{"tokens", uint64_t{rows}}, {"capacity", uint64_t{cache.capacity_}}},
                "cached prefill has " + Count(rows) + " prompt tokens, exceeding capacity " +
                    Count(cache.capacity_));
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
  // The engine takes at most max_rows_per_step rows at once (the reference
  // engine: 1; the fast engine: its bounded workspace, EngineOptions::
  // max_rows_per_step). Every chunk forwards on top of the rows of the chunks
  // before it, which the engine has written past the committed length where no
  // reader of the cache looks; the length and the counters advance once, after
  // the last chunk. A failure in any chunk leaves the cache empty as it was
  // (stale rows past the length stay, as after any failed step).
  // rows >= 1 (validated); no placeholder result, which would allocate.
  const size_t chunk = std::max<size_t>(1, engine_->max_rows_per_step());
  KvWork work = cache_->work_;
  uint64_t last_row_scores = 0;
  for (size_t first = 0; first < rows; first += chunk) {
    const size_t count = std::min(chunk, rows - first);
    Result<void> prepared =
        PrepareRows(prompts.subspan(first), rows, first, count, Phase::kPrefill, work, last_row_scores);
    if (!prepared) return Fail(std::move(prepared.error()));
  }
  StepOutput output = CommitRows(rows, work, last_row_scores);
  cache_->prefill_complete_ = true;
  return output;
}

Result<StepOutput> DecoderKvSession::DecodeBatch(std::span<const uint32_t> tokens) try {
  DecoderKvCache& cache = *cache_;
  const size_t vocabulary = cache.config_.vocabulary_size;
  if (!cache.prefill_complete_ || cache.len_ == 0) {
    return Fail(ErrorCode::kDecodeRequiresPrefill, {},
                "cached decode requires one completed nonempty prompt prefill");
  }
  if (tokens.size() != cache.batch_size_) {
    return Fail(ErrorCode::kBatchShapeMismatch,
                {{"batch_size", uint64_t{cache.batch_size_}}, {"tokens", uint64_t{tokens.size()}}},
                "cached decode needs one token per sequence (" + Count(cache.batch_size_) +
                    "), got " + Count(tokens.size()));
  }
  for (uint32_t token : tokens) {
    if (token >= vocabulary) {
      return Fail(ErrorCode::kDecodeTokenOutOfBounds,
                  {{"token_id", uint64_t{token}}, {"vocabulary_size", uint64_t{vocabulary}}},
                  "cached decode token " + Count(token) + " is out of bounds for vocabulary " +
                      Count(vocabulary));
    }
  }
  if (cache.len_ == cache.capacity_) {
    return Fail(ErrorCode::kFull, {{"capacity", uint64_t{cache.capacity_}}},
                "decoder KV cache is full at capacity " + Count(cache.capacity_));
  }
  KvWork work = cache.work_;
  uint64_t last_row_scores = 0;
  Result<void> prepared =
      PrepareRows(tokens, 1, cache.len_, 1, Phase::kDecode, work, last_row_scores);
  if (!prepared) return Fail(std::move(prepared.error()));
  return CommitRows(1, work, last_row_scores);
} catch (const std::bad_alloc&) {
  return Fail(StepAllocationFailed());  // Step commits only after its last check
}

Result<void> DecoderKvSession::PrepareRows(std::span<const uint32_t> tokens, size_t token_stride,
                                           size_t start, size_t rows, Phase phase, KvWork& work,
                                           uint64_t& last_row_scores) {
  DecoderKvCache& cache = *cache_;
  const ModelConfig& config = cache.config_;
  const size_t batch = cache.batch_size_;
  const size_t committed = cache.len_;
  std::span<LayerKvCache> layers(cache.layers_);

  // Phase 1: prepare every block; nothing the cache exposes changes.
  detail::EngineStep step;
  step.tokens = tokens.data();
  step.token_stride = token_stride;
  step.batch = batch;
  step.rows = rows;
  step.start = start;
  std::span<double> logits(logits_.data(), batch * config.vocabulary_size);
  if (Result<void> prepared = engine_->Prepare(step, layers, logits); !prepared) {
    return Fail(std::move(prepared.error()));
  }

  // Phase 2: side-effect-free checks. The engine must have left every layer where
  // it was, and the counters must not overflow.
  for (size_t l = 0; l < layers.size(); ++l) {
    if (layers[l].len() != committed) {
      return Fail(ErrorCode::kPreparedCacheChanged, {{"layer", uint64_t{l}}},
                  "layer cache " + Count(l) + " changed while a token step was prepared");
    }
  }
  size_t next_len = 0;
  if (__builtin_add_overflow(start, rows, &next_len)) return Fail(WorkOverflow("TokenForwards"));
  uint64_t qkv_per_token = 0;
  if (__builtin_mul_overflow(uint64_t{3}, uint64_t{config.layers}, &qkv_per_token)) {
    return Fail(WorkOverflow("QkvProjectionRows"));
  }
  KvWork next = work;
  uint64_t row_scores = 0;
  for (size_t r = 0; r < rows; ++r) {
    // Every row counts as the serial reference would count it.
    const bool scores_ok = !__builtin_mul_overflow(uint64_t{config.layers} * batch * config.heads,
                                                   uint64_t{start + r + 1}, &row_scores);
    if (!CheckedIncrement(next.token_forwards, batch)) return Fail(WorkOverflow("TokenForwards"));
    if (!CheckedIncrement(next.prefill_tokens, phase == Phase::kPrefill ? batch : 0)) {
      return Fail(WorkOverflow("PrefillTokens"));
    }
    if (!CheckedIncrement(next.decode_tokens, phase == Phase::kDecode ? batch : 0)) {
      return Fail(WorkOverflow("DecodeTokens"));
    }
    if (!CheckedIncrement(next.cache_appends, uint64_t{config.layers} * batch)) {
      return Fail(WorkOverflow("CacheAppends"));
    }
    if (!CheckedIncrement(next.qkv_projection_rows, qkv_per_token * batch)) {
      return Fail(WorkOverflow("QkvProjectionRows"));
    }
    if (!scores_ok || !CheckedIncrement(next.attention_score_values, row_scores)) {
      return Fail(WorkOverflow("AttentionScoreValues"));
    }
  }

  // The rows go to their slots past the committed length (a staged decode row is
  // copied; a multi-row step is already there). They stay invisible: the length
  // is unchanged until CommitRows, and a later chunk reads them from the slots.
  engine_->Commit(step, layers);
  work = next;
  last_row_scores = row_scores;
  return {};
}

StepOutput DecoderKvSession::CommitRows(size_t rows, const KvWork& work, uint64_t last_row_scores) {
  DecoderKvCache& cache = *cache_;
  const size_t next_len = cache.len_ + rows;  // checked by PrepareRows
  for (LayerKvCache& layer : cache.layers_) layer.len_ = next_len;
  cache.len_ = next_len;
  cache.work_ = work;
  StepOutput output;
  output.logits = std::span<double>(logits_.data(), cache.batch_size_ * cache.config_.vocabulary_size);
  output.position = next_len - 1;
  output.cache_len = next_len;
  output.attention_score_values = last_row_scores;
  return output;
}

void DecoderKvSession::Reset() { ResetState(); }

void DecoderKvSession::ResetState() {
  DecoderKvCache& cache = *cache_;
  for (LayerKvCache& layer : cache.layers_) layer.len_ = 0;
  cache.len_ = 0;
  cache.prefill_complete_ = false;
  cache.work_ = KvWork{};
}

Result<Session> Session::Open(const DecoderModel& model, SessionOptions options) try {
  CacheOptions cache_options;
  cache_options.batch_size = options.batch_size;
  cache_options.capacity = options.capacity;
  cache_options.precision = options.engine.precision;
  Result<DecoderKvCache> cache = DecoderKvCache::Create(model, cache_options);
  if (!cache) return Fail(std::move(cache.error()));
  auto owned = std::make_unique<DecoderKvCache>(std::move(*cache));
  Result<DecoderKvSession> session = owned->Bind(model, options.engine);
  if (!session) return Fail(std::move(session.error()));
  return Session(std::move(owned), std::make_unique<DecoderKvSession>(std::move(*session)));
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the session");
}

}  // namespace kvrt
