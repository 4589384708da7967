#include "kvrt/generation.h"

#include <algorithm>
#include <new>
#include <string>

#include "generate/generation_cursor.h"
#include "generate/generation_loop.h"
#include "weights/engine_weights.h"
#include "kv/decoder_kv_cache.h"
#include "engine/reference/complete_prefix.h"
#include "session/owned_session.h"
#include "generate/generate.h"

namespace kvrt {
namespace {

std::string Count(uint64_t n) { return std::to_string(n); }

// Cached: one prefill, then one decode per needed token.
class SessionSource final : public LogitSource {
 public:
  explicit SessionSource(DecoderKvSession& session) : session_(session) {}
  Result<std::span<const double>> First(std::span<const uint32_t> prompt) override {
    return Unwrap(session_.Prefill(prompt));
  }
  Result<std::span<const double>> Next(std::span<const uint32_t>, uint32_t token) override {
    return Unwrap(session_.Decode(token));
  }
  size_t calls() const override { return calls_; }

 private:
  Result<std::span<const double>> Unwrap(Result<StepOutput> output) {
    if (!output) return Fail(std::move(output.error()).Wrap(ErrorCode::kCache));
    ++calls_;
    return output->logits;
  }
  DecoderKvSession& session_;
  size_t calls_ = 0;
};

// Uncached, reference: the complete-prefix pass over the whole prefix.
class CompletePrefixSource final : public LogitSource {
 public:
  explicit CompletePrefixSource(const DecoderModel& model) : model_(model) {}
  Result<std::span<const double>> First(std::span<const uint32_t> prompt) override {
    return Forward(prompt);
  }
  Result<std::span<const double>> Next(std::span<const uint32_t> prefix, uint32_t) override {
    return Forward(prefix);
  }
  size_t calls() const override { return calls_; }

 private:
  Result<std::span<const double>> Forward(std::span<const uint32_t> prefix) {
    Result<std::vector<double>> logits = LastLogitsCompletePrefix(model_, prefix);
    if (!logits) return Fail(std::move(logits.error()).Wrap(ErrorCode::kModel));
    ++calls_;
    last_ = std::move(*logits);
    return std::span<const double>(last_);
  }
  const DecoderModel& model_;
  std::vector<double> last_;
  size_t calls_ = 0;
};

// Uncached, any engine: replays the whole prefix through a fresh prefill.
class ReplaySource final : public LogitSource {
 public:
  explicit ReplaySource(DecoderKvSession& session) : session_(session) {}
  Result<std::span<const double>> First(std::span<const uint32_t> prompt) override {
    return Replay(prompt);
  }
  Result<std::span<const double>> Next(std::span<const uint32_t> prefix, uint32_t) override {
    return Replay(prefix);
  }
  size_t calls() const override { return calls_; }

 private:
  Result<std::span<const double>> Replay(std::span<const uint32_t> prefix) {
    session_.Reset();
    Result<StepOutput> output = session_.Prefill(prefix);
    if (!output) return Fail(std::move(output.error()).Wrap(ErrorCode::kModel));
    ++calls_;
    return output->logits;
  }
  DecoderKvSession& session_;
  size_t calls_ = 0;
};

// spec/sampling.md §5.1 steps 1–5, with the cached loop's message prefix.
Result<void> ValidateRequest(const ModelConfig& config, std::span<const uint32_t> prompt,
                             const GenerationConfig& request, bool cached) {
  const std::string who = cached ? "cached generation " : "";
  const size_t capacity = config.max_positions, vocabulary = config.vocabulary_size;
  if (prompt.empty()) {
    return Fail(
        ErrorCode::kEmptyPrompt, {},
        std::string(cached ? "cached generation" : "generation") + " needs a nonempty prompt");
  }
  if (prompt.size() > capacity) {
    return Fail(ErrorCode::kPromptTooLong,
                {{"tokens", uint64_t{prompt.size()}}, {"max_positions", uint64_t{capacity}}},
                who + "prompt has " + Count(prompt.size()) +
                    " tokens, exceeding context capacity " + Count(capacity));
  }
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] >= vocabulary) {
      return Fail(ErrorCode::kPromptTokenOutOfBounds,
                  {{"position", uint64_t{i}},
                   {"token_id", uint64_t{prompt[i]}},
                   {"vocabulary_size", uint64_t{vocabulary}}},
                  who + "prompt token " + Count(prompt[i]) + " at position " + Count(i) +
                      " is out of bounds for vocabulary " + Count(vocabulary));
    }
  }
  std::optional<uint32_t> end_out_of_bounds;
  if (request.eos_token && *request.eos_token >= vocabulary) end_out_of_bounds = request.eos_token;
  for (const uint32_t end : request.end_of_generation) {
    if (!end_out_of_bounds && end >= vocabulary) end_out_of_bounds = end;
  }
  if (end_out_of_bounds) {
    return Fail(
        ErrorCode::kEosTokenOutOfBounds,
        {{"token_id", uint64_t{*end_out_of_bounds}}, {"vocabulary_size", uint64_t{vocabulary}}},
        (cached ? "cached generation EOS token " : "EOS token ") + Count(*end_out_of_bounds) +
            " is out of bounds for vocabulary " + Count(vocabulary));
  }
  if (Result<void> mode = ValidateSamplingMode(request.mode, vocabulary); !mode) {
    return Fail(std::move(mode.error()).Wrap(ErrorCode::kSampling));
  }
  return {};
}

// The loops' own bookkeeping (the result's vectors, the sampler, the complete-
// prefix forward's activations) can run out of memory; that is a typed error
// too. Draws of steps that already ran are not rolled back (see generation.h).
std::unexpected<Error> GenerationAllocationFailed() {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the generation state");
}

Error WorkOverflow(const char* counter) {
  return Error(ErrorCode::kWorkOverflow, {{"counter", Identifier{counter}}},
               std::string("generation work counter ") + counter + " overflowed");
}

}  // namespace

bool GenerationConfig::Ends(uint32_t token) const {
  if (eos_token && token == *eos_token) return true;
  return std::find(end_of_generation.begin(), end_of_generation.end(), token) !=
         end_of_generation.end();
}

Result<void> ValidateCachedRequest(const ModelConfig& config, std::span<const uint32_t> prompt,
                                   const GenerationConfig& request) {
  return ValidateRequest(config, prompt, request, true);
}

Result<GenerationCursor> GenerationCursor::Create(const ModelConfig& config,
                                                  const GenerationConfig& request,
                                                  std::span<const uint32_t> prompt, Sampler& sampler) {
  GenerationCursor cursor(config, request, sampler);
  // Buffers sized for the whole run up front: the loop itself allocates nothing.
  const size_t planned =
      std::min(request.max_new_tokens, config.max_positions - prompt.size() + 1);
  cursor.result_.prompt.assign(prompt.begin(), prompt.end());
  cursor.result_.work.layer_cache_count = config.layers;
  cursor.result_.generated.reserve(planned);
  cursor.result_.steps.reserve(planned);
  cursor.prefix_.assign(prompt.begin(), prompt.end());
  cursor.prefix_.reserve(prompt.size() + planned);
  return cursor;
}

Result<bool> GenerationCursor::Advance(std::span<const double> logits, SplitMix64& rng,
                                       const TokenCallback& on_token) {
  const size_t vocabulary = config_.vocabulary_size, capacity = config_.max_positions;
  const uint64_t lanes = uint64_t{config_.layers} * config_.heads;
  uint64_t& complete_scores = result_.work.complete_prefix_attention_score_values;
  const uint64_t length = prefix_.size();
  uint64_t prefix_scores = 0;
  if (__builtin_mul_overflow(lanes, length * length, &prefix_scores) ||
      __builtin_add_overflow(complete_scores, prefix_scores, &complete_scores)) {
    return Fail(WorkOverflow("CompletePrefixAttentionScoreValues"));
  }
  if (logits.size() != vocabulary) {
    return Fail(ErrorCode::kLogitCountMismatch,
                {{"expected", uint64_t{vocabulary}}, {"actual", uint64_t{logits.size()}}},
                "model returned " + Count(logits.size()) + " logits, expected " + Count(vocabulary));
  }
  Result<TokenSelection> selection = sampler_->Sample(logits, request_.mode, rng);
  if (!selection) return Fail(std::move(selection.error()).Wrap(ErrorCode::kSampling));
  const uint32_t token = selection->token_id;
  result_.generated.push_back(token);
  result_.steps.push_back({prefix_.size(), token, selection->unit_draw, selection->interval_start,
                           selection->interval_end});
  prefix_.push_back(token);
  if (on_token) on_token(token);
  if (request_.Ends(token)) {
    result_.stop = GenerationStop::kEos;
    return false;
  }
  if (result_.generated.size() == request_.max_new_tokens) {
    result_.stop = GenerationStop::kTokenLimit;
    return false;
  }
  if (prefix_.size() > capacity) {
    result_.stop = GenerationStop::kContextLimit;
    return false;
  }
  return true;
}

Result<void> RunGenerationLoop(const ModelConfig& config, const GenerationConfig& request,
                               SplitMix64& rng, LogitSource& source, const TokenCallback& on_token,
                               GenerationResult& result) {
  Result<Sampler> sampler = Sampler::Create(config.vocabulary_size);
  if (!sampler) return Fail(std::move(sampler.error()));
  Result<GenerationCursor> cursor = GenerationCursor::Create(config, request, result.prompt, *sampler);
  if (!cursor) return Fail(std::move(cursor.error()));
  Result<std::span<const double>> logits = source.First(result.prompt);
  for (;;) {
    if (!logits) return Fail(std::move(logits.error()));
    Result<bool> more = cursor->Advance(*logits, rng, on_token);
    if (!more) return Fail(std::move(more.error()));
    if (!*more) break;
    logits = source.Next(cursor->prefix(), cursor->token());
  }
  GenerationResult& run = cursor->result();
  result.generated = std::move(run.generated);
  result.steps = std::move(run.steps);
  result.stop = run.stop;
  result.model_calls = source.calls();
  result.work.complete_prefix_attention_score_values =
      run.work.complete_prefix_attention_score_values;
  return {};
}

std::string_view GenerationStopName(GenerationStop stop) {
  switch (stop) {
    case GenerationStop::kEos:
      return "eos";
    case GenerationStop::kTokenLimit:
      return "token-limit";
    case GenerationStop::kContextLimit:
      return "context-limit";
  }
  return "unknown";
}

Result<GenerationResult> GenerateCached(const DecoderModel& model, std::span<const uint32_t> prompt,
                                        const GenerationConfig& config, SplitMix64& rng,
                                        EngineOptions engine, const TokenCallback& on_token) try {
  const ModelConfig& model_config = model.config();
  if (Result<void> valid = ValidateRequest(model_config, prompt, config, true); !valid) {
    return Fail(std::move(valid.error()));
  }
  GenerationResult result;
  result.prompt.assign(prompt.begin(), prompt.end());
  result.work.layer_cache_count = model_config.layers;
  if (config.max_new_tokens == 0) return result;  // no cache, no model call, no draw

  Result<OwnedSession> session = OwnedSession::Open(model, engine);
  if (!session) return Fail(std::move(session.error()).Wrap(ErrorCode::kCache));
  SessionSource source(session->session());
  if (Result<void> ran = RunGenerationLoop(model_config, config, rng, source, on_token, result);
      !ran) {
    return Fail(std::move(ran.error()));
  }
  const KvWork& work = session->cache().work();
  result.final_cache_len = session->cache().len();
  result.work.prefill_tokens = work.prefill_tokens;
  result.work.decode_tokens = work.decode_tokens;
  result.work.cache_appends = work.cache_appends;
  result.work.qkv_projection_rows = work.qkv_projection_rows;
  result.work.cached_attention_score_values = work.attention_score_values;
  return result;
} catch (const std::bad_alloc&) {
  return GenerationAllocationFailed();
}

Result<GenerationResult> GenerateUncached(const DecoderModel& model,
                                          std::span<const uint32_t> prompt,
                                          const GenerationConfig& config, SplitMix64& rng,
                                          EngineOptions engine, const TokenCallback& on_token) try {
  const ModelConfig& model_config = model.config();
  if (Result<void> valid = ValidateRequest(model_config, prompt, config, false); !valid) {
    return Fail(std::move(valid.error()));
  }
  GenerationResult result;
  result.prompt.assign(prompt.begin(), prompt.end());
  if (config.max_new_tokens == 0) return result;
  if (engine.backend == Backend::kReference) {
    // With a weight format, the oracle's complete-prefix pass runs on the format's
    // dequantized values (the model itself for kAsStored).
    Result<std::shared_ptr<const DecoderModel>> oracle =
        engine.weights == WeightFormat::kAsStored
            ? Result<std::shared_ptr<const DecoderModel>>(nullptr)
            : detail::WeightsCacheOf(model).Dequantized(model, engine.weights);
    if (!oracle) return Fail(std::move(oracle.error()));
    CompletePrefixSource source(*oracle ? **oracle : model);
    if (Result<void> ran = RunGenerationLoop(model_config, config, rng, source, on_token, result);
        !ran) {
      return Fail(std::move(ran.error()));
    }
    return result;
  }
  // The fast engine has no uncached forward: each step replays the whole prefix
  // into an emptied session.
  Result<OwnedSession> session = OwnedSession::Open(model, engine);
  if (!session) return Fail(std::move(session.error()).Wrap(ErrorCode::kModel));
  ReplaySource source(session->session());
  if (Result<void> ran = RunGenerationLoop(model_config, config, rng, source, on_token, result);
      !ran) {
    return Fail(std::move(ran.error()));
  }
  return result;
} catch (const std::bad_alloc&) {
  return GenerationAllocationFailed();
}

}  // namespace kvrt
