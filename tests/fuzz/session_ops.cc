// The operations of the session fuzzer. Each reads its arguments, predicts from
// the shadow state what the spec says must happen (which error, in which
// validation order, or success), performs the call and checks the outcome. A
// rejected call must leave its cache equal to the copy taken before it.
#include <cmath>
#include <limits>
#include <string>

#include "cache_state.h"
#include "fuzz_check.h"
#include "kvrt/threading/thread_pool.h"
#include "session_world.h"

namespace kvrt::fuzz {
namespace {

threading::ThreadPool& SharedPool() {
  static threading::ThreadPool pool(2);
  return pool;
}

void ExpectError(const Error& error, ErrorCode code, const std::string& what) {
  CheckTypedError(error);
  KVRT_FUZZ_CHECK(error.code() == code, what + ": " + error.Debug());
}

// Tokens in [0, V) most of the time, and sometimes just past the vocabulary.
std::vector<uint32_t> ReadTokens(FuzzInput& input, size_t count, size_t vocabulary) {
  std::vector<uint32_t> tokens(count);
  for (uint32_t& token : tokens) {
    const uint8_t byte = input.Byte();
    token = byte == 0xFF ? static_cast<uint32_t>(vocabulary + input.Below(3))
                         : static_cast<uint32_t>(byte % vocabulary);
  }
  return tokens;
}

}  // namespace

void SessionWorld::NewCache(FuzzInput& input) {
  const size_t slot = input.Below(kCacheSlots), model = input.Below(kModels);
  CacheOptions options;
  options.batch_size = input.Below(3);  // 0 is invalid
  options.capacity = input.Below(config().max_positions + 2);  // 0 means max_positions
  options.precision = input.Bit() ? Precision::kF32 : Precision::kF64;
  ReleaseCache(slot);
  caches_[slot].reset();
  before_[slot].reset();
  target_ = slot;

  const size_t capacity = options.capacity == 0 ? config().max_positions : options.capacity;
  std::optional<ErrorCode> predicted;
  if (options.batch_size == 0) predicted = ErrorCode::kZeroBatchSize;
  if (!predicted && capacity > config().max_positions) predicted = ErrorCode::kCapacityExceedsPositions;
  Result<DecoderKvCache> made = DecoderKvCache::Create(models_[model], options);
  if (predicted) {
    KVRT_FUZZ_CHECK(!made, "invalid cache options accepted");
    CheckTypedError(made.error());
    KVRT_FUZZ_CHECK(made.error().Has(*predicted), made.error().Debug());
    return;
  }
  KVRT_FUZZ_CHECK(made, Describe(made));
  KVRT_FUZZ_CHECK(made->capacity() == capacity && made->batch_size() == options.batch_size &&
                      made->precision() == options.precision && !made->is_bound(),
                  "cache geometry");
  caches_[slot].emplace(std::move(*made));
  shadows_[slot] = CacheShadow{model, revisions_[NodeSetOf(model)], 0, 0, false, std::nullopt};
}

void SessionWorld::CloneCache(FuzzInput& input) {
  const size_t source = input.Below(kCacheSlots), slot = input.Below(kCacheSlots);
  if (!caches_[source] || source == slot) return;
  ReleaseCache(slot);
  caches_[slot].reset();
  before_[slot].reset();
  target_ = slot;
  Result<DecoderKvCache> copy = caches_[source]->Clone();
  KVRT_FUZZ_CHECK(copy, Describe(copy));
  KVRT_FUZZ_CHECK(!copy->is_bound() && SameState(*copy, *caches_[source]), "clone differs");
  caches_[slot].emplace(std::move(*copy));
  shadows_[slot] = shadows_[source];
  shadows_[slot].session.reset();
}

std::optional<ErrorCode> SessionWorld::PredictBind(size_t cache, size_t model,
                                                   const EngineOptions& engine) const {
  const CacheShadow& shadow = shadows_[cache];
  if (shadow.session) return ErrorCode::kCacheAlreadyBound;
  if (!caches_[cache]->config().SameAs(models_[model].config())) return ErrorCode::kModelConfigMismatch;
  if (NodeSetOf(shadow.model) != NodeSetOf(model)) return ErrorCode::kModelParameterMismatch;
  if (shadow.captured != revisions_[NodeSetOf(model)]) return ErrorCode::kModelParameterRevisionMismatch;
  if (engine.backend == Backend::kReference && engine.precision != Precision::kF64) {
    return ErrorCode::kUnsupportedBackend;
  }
  if (engine.precision != caches_[cache]->precision()) return ErrorCode::kUnsupportedBackend;
  return std::nullopt;
}

void SessionWorld::Bind(FuzzInput& input) {
  const size_t cache = input.Below(kCacheSlots), model = input.Below(kModels);
  const size_t slot = input.Below(kSessionSlots);
  EngineOptions engine;
  const size_t kind = input.Below(4);  // reference f64, fast f64, fast f32, reference f32
  engine.backend = kind == 1 || kind == 2 ? Backend::kFast : Backend::kReference;
  engine.precision = kind >= 2 ? Precision::kF32 : Precision::kF64;
  if (engine.backend == Backend::kFast && input.Bit()) engine.pool = &SharedPool();
  if (!caches_[cache]) return;
  DropSession(slot);
  target_ = cache;

  const std::optional<ErrorCode> predicted = PredictBind(cache, model, engine);
  Result<DecoderKvSession> session = kvrt::Bind(*caches_[cache], models_[model], engine);
  if (predicted) {
    KVRT_FUZZ_CHECK(!session, "bind accepted, expected " + std::string(ErrorName(*predicted)));
    ExpectError(session.error(), *predicted, "bind");
    if (*predicted == ErrorCode::kModelParameterMismatch) {
      KVRT_FUZZ_CHECK(session.error().U64("index") == 0, session.error().Debug());
    }
    KVRT_FUZZ_CHECK(SameState(*caches_[cache], *before_[cache]), "rejected bind changed the cache");
    return;
  }
  KVRT_FUZZ_CHECK(session, Describe(session));
  sessions_[slot].session.emplace(std::move(*session));
  sessions_[slot].cache = cache;
  sessions_[slot].model = model;
  shadows_[cache].session = slot;
}

void SessionWorld::Prefill(FuzzInput& input) {
  SessionSlot& slot = sessions_[input.Below(kSessionSlots)];
  if (!slot.session) return;
  const size_t cache_slot = slot.cache;
  const DecoderKvCache& cache = *caches_[cache_slot];
  CacheShadow& shadow = shadows_[cache_slot];
  const size_t batch = cache.batch_size(), vocabulary = cache.config().vocabulary_size;
  const size_t rows = input.Below(cache.capacity() + 2);
  const size_t count = rows * batch + (input.Byte() == 0 ? 1 : 0);  // sometimes not [B, T]
  const std::vector<uint32_t> tokens = ReadTokens(input, count, vocabulary);
  target_ = cache_slot;

  std::optional<ErrorCode> predicted;
  if (tokens.empty()) {
    predicted = ErrorCode::kEmptyPrompt;
  } else if (tokens.size() % batch != 0) {
    predicted = ErrorCode::kBatchShapeMismatch;
  } else if (shadow.len != 0 || shadow.complete) {
    predicted = ErrorCode::kPrefillRequiresEmpty;
  } else if (tokens.size() / batch > cache.capacity()) {
    predicted = ErrorCode::kPromptTooLong;
  } else {
    for (uint32_t token : tokens) {
      if (token >= vocabulary) predicted = ErrorCode::kPromptTokenOutOfBounds;
      if (predicted) break;
    }
  }
  Result<StepOutput> step = batch == 1 && input.Bit() ? slot.session->Prefill(tokens)
                                                      : slot.session->PrefillBatch(tokens);
  if (predicted) {
    KVRT_FUZZ_CHECK(!step, "prefill accepted, expected " + std::string(ErrorName(*predicted)));
    ExpectError(step.error(), *predicted, "prefill");
    KVRT_FUZZ_CHECK(SameState(cache, *before_[cache_slot]), "rejected prefill changed the cache");
    return;
  }
  const size_t prompt_rows = tokens.size() / batch;
  if (!step) {
    // A numeric failure while forwarding: back to the empty state (spec §3.5).
    CheckTypedError(step.error());
    KVRT_FUZZ_CHECK(extreme_values_, "prefill failed on ordinary weights: " + step.error().Debug());
    shadow.len = shadow.prompt_rows = 0;
    shadow.complete = false;
    return;
  }
  const ModelConfig& model_config = cache.config();
  KVRT_FUZZ_CHECK(step->cache_len == prompt_rows && step->position == prompt_rows - 1 &&
                      step->logits.size() == batch * vocabulary &&
                      step->attention_score_values ==
                          model_config.layers * batch * model_config.heads * prompt_rows,
                  "prefill output");
  shadow.len = shadow.prompt_rows = prompt_rows;
  shadow.complete = true;
}

void SessionWorld::Decode(FuzzInput& input) {
  SessionSlot& slot = sessions_[input.Below(kSessionSlots)];
  if (!slot.session) return;
  const size_t cache_slot = slot.cache;
  const DecoderKvCache& cache = *caches_[cache_slot];
  CacheShadow& shadow = shadows_[cache_slot];
  const size_t batch = cache.batch_size(), vocabulary = cache.config().vocabulary_size;
  const size_t count = input.Byte() == 0 ? batch + 1 : batch;  // sometimes not one per sequence
  const std::vector<uint32_t> tokens = ReadTokens(input, count, vocabulary);
  target_ = cache_slot;

  std::optional<ErrorCode> predicted;
  if (!shadow.complete || shadow.len == 0) {
    predicted = ErrorCode::kDecodeRequiresPrefill;
  } else if (tokens.size() != batch) {
    predicted = ErrorCode::kBatchShapeMismatch;
  } else {
    for (uint32_t token : tokens) {
      if (token >= vocabulary) predicted = ErrorCode::kDecodeTokenOutOfBounds;
      if (predicted) break;
    }
    if (!predicted && shadow.len == cache.capacity()) predicted = ErrorCode::kFull;
  }
  Result<StepOutput> step = batch == 1 && tokens.size() == 1 && input.Bit()
                                ? slot.session->Decode(tokens[0])
                                : slot.session->DecodeBatch(tokens);
  if (predicted || !step) {
    if (predicted) {
      KVRT_FUZZ_CHECK(!step, "decode accepted, expected " + std::string(ErrorName(*predicted)));
      ExpectError(step.error(), *predicted, "decode");
    } else {
      CheckTypedError(step.error());
      KVRT_FUZZ_CHECK(extreme_values_, "decode failed on ordinary weights: " + step.error().Debug());
    }
    // Any failed decode leaves the state exactly as it was (spec §3.6).
    KVRT_FUZZ_CHECK(SameState(cache, *before_[cache_slot]), "failed decode changed the cache");
    return;
  }
  const ModelConfig& model_config = cache.config();
  KVRT_FUZZ_CHECK(step->cache_len == shadow.len + 1 && step->position == shadow.len &&
                      step->logits.size() == batch * vocabulary &&
                      step->attention_score_values ==
                          model_config.layers * batch * model_config.heads * (shadow.len + 1),
                  "decode output");
  shadow.len += 1;
}

void SessionWorld::Reset(FuzzInput& input) {
  SessionSlot& slot = sessions_[input.Below(kSessionSlots)];
  if (!slot.session) return;
  target_ = slot.cache;
  slot.session->Reset();
  CacheShadow& shadow = shadows_[slot.cache];
  shadow.len = shadow.prompt_rows = 0;
  shadow.complete = false;
}

void SessionWorld::Drop(FuzzInput& input) { DropSession(input.Below(kSessionSlots)); }

// The in-process optimiser step (spec/kv-cache.md §5.3): validation in list
// order, then ParameterValueBorrowed while any session reads the nodes.
void SessionWorld::Update(FuzzInput& input) {
  const size_t model = input.Below(kModels), set = NodeSetOf(model);
  DecoderModel& target = models_[model];
  const size_t parameters = target.parameters().size();
  std::vector<ParameterUpdate> updates(input.Below(4));
  std::vector<bool> listed(parameters, false);
  std::optional<ErrorCode> predicted;
  bool extreme = false;
  for (ParameterUpdate& update : updates) {
    const size_t kind = input.Below(9);
    update.index = kind == 8 ? parameters + input.Below(3) : input.Below(parameters);
    std::optional<ErrorCode> error;
    if (update.index >= parameters) {
      error = ErrorCode::kUnknownParameter;
    } else {
      const Parameter& parameter = target.parameter(update.index);
      update.values.resize(parameter.element_count());
      parameter.ReadValues(update.values);
      for (double& value : update.values) {
        if (kind <= 3) value *= 1.0 + 0x1p-20;  // an ordinary training step
        if (kind == 4) value = 0.0;
        if (kind == 5) value = value < 0 ? -1e150 : 1e150;  // overflows the forward
      }
      if (kind == 6) update.values[input.Below(update.values.size())] = std::nan("");
      if (kind == 7) update.values.push_back(1.0);
      if (listed[update.index]) {
        error = ErrorCode::kInvalidArgument;  // listed twice
      } else if (kind == 7) {
        error = ErrorCode::kParameterShapeMismatch;
      } else if (kind == 6) {
        error = ErrorCode::kNonFiniteParameter;
      }
      listed[update.index] = true;
      extreme |= kind == 5;
    }
    if (!predicted) predicted = error;
  }
  if (!predicted && !updates.empty() && NodeSetBorrowed(set)) predicted = ErrorCode::kParameterValueBorrowed;

  Result<void> updated = target.UpdateParameters(updates);
  if (predicted) {
    KVRT_FUZZ_CHECK(!updated, "update accepted, expected " + std::string(ErrorName(*predicted)));
    ExpectError(updated.error(), *predicted, "update");
    if (*predicted == ErrorCode::kParameterValueBorrowed) {
      const FieldValue* name = updated.error().Field("name");
      KVRT_FUZZ_CHECK(name && *name == FieldValue(target.parameter(updates[0].index).name()),
                      updated.error().Debug());
    }
    return;  // revisions unchanged: CheckAll compares them with the shadow
  }
  KVRT_FUZZ_CHECK(updated, Describe(updated));
  for (const ParameterUpdate& update : updates) ++revisions_[set][update.index];
  extreme_values_ |= extreme;
}

}  // namespace kvrt::fuzz
