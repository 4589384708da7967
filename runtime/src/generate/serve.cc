// ServeGenerations and ServeGenerationStream: a request driver over the slots of
// one cache (generation.h, serve_stream.h).
//
// Every step: admit waiting requests into free slots (in request order, not
// before their arrival step), then one DecoderKvSession::Step with a decode run
// for every slot that has a token to feed and a prompt chunk for slots still
// prefilling, within the engine's row limits (decodes first, so a long prompt
// never stalls the other slots). A run's logits go to its request's cursor;
// a finished request frees its slot at once, and finished results leave in
// request order. A step that fails is retried run by run: the steps are
// batch-invariant, so a run that succeeds alone gives the same bits, and only the
// requests whose own rows fail get the error GenerateCached would have given them.
#include <algorithm>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "generate/generation_cursor.h"
#include "generate/serve_stream.h"
#include "generate/generate.h"
#include "kv/decoder_kv_cache.h"
#include "session/decoder_kv_session.h"

namespace kvrt {
namespace {

// A request in a slot.
struct Active {
  size_t index = 0;  // in request order
  std::optional<GenerationCursor> cursor;
  SplitMix64 rng{0};
  size_t prompt_length = 0;
  size_t fed = 0;       // prompt tokens in the slot
  size_t calls = 0;     // successful model calls (the prefill, then decodes)
  size_t admitted_step = 0;
  bool decoding = false;
};

class RequestDriver {
 public:
  RequestDriver(const DecoderModel& model, GenerationRequestSource& source, const ServedCallback& deliver,
                const StreamOptions& options)
      : model_(model), config_(model.config()), source_(source), deliver_(deliver), options_(options) {}

  Result<void> Run() {
    if (auto started = Start(); !started) return started;
    while (true) {
      if (auto delivered = DeliverInOrder(); !delivered) return delivered;
      if (auto admitted = Admit(); !admitted) return admitted;
      if (!AnyActive()) {
        // Nothing runs, so every admitted request is finished and delivered now.
        if (auto delivered = DeliverInOrder(); !delivered) return delivered;
        if (!waiting_) return {};  // the source is exhausted (Admit asked it)
        // Idle until the next arrival (a request that has arrived was only held
        // back by undelivered results, which are gone now).
        if (waiting_->arrival_step > step_) step_ = waiting_->arrival_step;
        continue;
      }
      PlanStep();
      if (runs_.empty()) {  // cannot happen: an active slot always has rows and budget ≥ slots
        return Fail(ErrorCode::kInvariantViolation, {}, "the request driver built an empty step");
      }
      RunStep();
      ++step_;
    }
  }

 private:
  // The cache of `slots` sequences and its session; the slots' sampler chains
  // come later, each when its slot first gets a request.
  Result<void> Start() {
    CacheOptions cache_options;
    cache_options.batch_size = std::max<size_t>(1, options_.serve.slots);
    cache_options.capacity = options_.serve.capacity;
    cache_options.precision = options_.serve.engine.precision;
    cache_options.kv_type = options_.serve.engine.kv_type;
    Result<DecoderKvCache> cache = DecoderKvCache::Create(model_, cache_options);
    if (!cache) return Fail(std::move(cache.error()).Wrap(ErrorCode::kCache));
    cache_.emplace(std::move(*cache));
    Result<DecoderKvSession> session = Bind(*cache_, model_, options_.serve.engine);
    if (!session) return Fail(std::move(session.error()).Wrap(ErrorCode::kCache));
    session_.emplace(std::move(*session));
    slots_ = cache_options.batch_size;
    in_slot_.resize(slots_);
    samplers_.resize(slots_);
    runs_.reserve(slots_);
    return {};
  }

  // The next request from the source into waiting_, unless one already waits.
  Result<void> Peek() {
    if (waiting_ || source_done_) return {};
    Result<std::optional<GenerationRequest>> next = source_.Next();
    if (!next) return Fail(std::move(next.error()));
    if (!*next) {
      source_done_ = true;
      return {};
    }
    waiting_ = std::move(*next);
    return {};
  }

  // Admission into free slots, in request order. A request that fails its
  // checks, or asks for no tokens, finishes at once without a slot.
  Result<void> Admit() {
    for (size_t slot = 0; slot < slots_; ++slot) {
      if (in_slot_[slot]) continue;
      while (true) {
        if (auto peeked = Peek(); !peeked) return peeked;
        if (!waiting_ || waiting_->arrival_step > step_ || held_.size() >= options_.max_held_results) {
          return {};
        }
        GenerationRequest request = std::move(*waiting_);
        waiting_.reset();
        if (auto placed = Place(slot, std::move(request)); !placed) return placed;
        if (in_slot_[slot]) break;
      }
    }
    return {};
  }

  // Puts `request` (the next in order) into `slot`, or finishes it at once.
  Result<void> Place(size_t slot, GenerationRequest request) {
    const size_t index = next_index_++;
    ServedGeneration out;
    out.final_rng_state = request.rng_state;
    out.admitted_step = out.finished_step = step_;
    if (Result<void> valid = ValidateCachedRequest(config_, request.prompt, request.config); !valid) {
      out.error = std::move(valid.error());
      Hold(index, std::move(out));
      return {};
    }
    if (const size_t wanted = ContextCapacity(config_, request.config); wanted > cache_->capacity()) {
      out.error = Error(ErrorCode::kCapacityExceedsPositions,
                        {{"capacity", uint64_t{wanted}}, {"max_positions", uint64_t{cache_->capacity()}}},
                        "request context of " + std::to_string(wanted) +
                            " tokens exceeds the slots' capacity of " + std::to_string(cache_->capacity()));
      Hold(index, std::move(out));
      return {};
    }
    if (!samplers_[slot]) {
      Result<SamplerChain> chain = SamplerChain::Create(config_.vocabulary_size);
      if (!chain) return Fail(std::move(chain.error()));
      samplers_[slot].emplace(std::move(*chain));
    }
    Result<GenerationCursor> cursor =
        GenerationCursor::Create(config_, request.config, request.prompt, *samplers_[slot]);
    if (!cursor) {
      out.error = std::move(cursor.error());
      Hold(index, std::move(out));
      return {};
    }
    if (request.config.max_new_tokens == 0) {  // no cache, no model call, no draw
      out.result = std::move(cursor->result());
      Hold(index, std::move(out));
      return {};
    }
    Active& active = in_slot_[slot].emplace();
    active.index = index;
    active.cursor.emplace(std::move(*cursor));
    active.rng = SplitMix64(request.rng_state);
    active.prompt_length = request.prompt.size();
    active.admitted_step = step_;
    return {};
  }

  bool AnyActive() const {
    return std::any_of(in_slot_.begin(), in_slot_.end(), [](const auto& active) { return active.has_value(); });
  }

  // The step's runs: every decode, then prompt chunks within the limits.
  void PlanStep() {
    runs_.clear();
    size_t budget = session_->max_rows_per_step();
    for (size_t slot = 0; slot < slots_ && budget > 0; ++slot) {
      if (!in_slot_[slot] || !in_slot_[slot]->decoding) continue;
      runs_.push_back({slot, in_slot_[slot]->cursor->prefix().last(1), RunPhase::kDecode, true});
      --budget;
    }
    for (size_t slot = 0; slot < slots_ && budget > 0; ++slot) {
      if (!in_slot_[slot] || in_slot_[slot]->decoding) continue;
      const Active& active = *in_slot_[slot];
      // The cursor's prefix starts with the prompt and grows only after it.
      const std::span<const uint32_t> prompt = active.cursor->prefix().first(active.prompt_length);
      size_t chunk = std::min({prompt.size() - active.fed, budget, session_->max_rows_per_run()});
      if (options_.serve.prefill_chunk != 0) chunk = std::min(chunk, options_.serve.prefill_chunk);
      const bool last = active.fed + chunk == prompt.size();
      runs_.push_back({slot, prompt.subspan(active.fed, chunk), RunPhase::kPrefill, last});
      budget -= chunk;
    }
  }

  // One session step over runs_; when it fails, each run alone (invariant, so the
  // bits of the runs that succeed are the ones they would have had in the step).
  void RunStep() {
    const size_t vocabulary = config_.vocabulary_size;
    Result<SlotStepOutput> out = session_->Step(runs_);
    if (out) {
      for (size_t r = 0; r < runs_.size(); ++r) AfterRun(r, out->logits.subspan(r * vocabulary, vocabulary));
      return;
    }
    for (size_t r = 0; r < runs_.size(); ++r) {
      Result<SlotStepOutput> alone = session_->Step(std::span(runs_).subspan(r, 1));
      if (alone) {
        AfterRun(r, alone->logits.subspan(0, vocabulary));
      } else {
        Finish(runs_[r].slot, std::move(alone.error()).Wrap(ErrorCode::kCache));
      }
    }
  }

  // A prefill chunk advances the prompt; the logits of a completed prompt or of a
  // decode go to the cursor, which samples: the request goes on or finishes.
  void AfterRun(size_t r, std::span<const double> logits) {
    const SlotRun& run = runs_[r];
    Active& active = *in_slot_[run.slot];
    if (run.phase == RunPhase::kPrefill) {
      active.fed += run.tokens.size();
      if (!run.completes_prompt) return;
    }
    ++active.calls;
    Result<bool> more = active.cursor->Advance(logits, active.rng, {});
    if (!more) return Finish(run.slot, std::move(more.error()));
    if (!*more) return Finish(run.slot, std::nullopt);
    active.decoding = true;
  }

  // The request in `slot` is done: its result waits for delivery, the slot is free.
  void Finish(size_t slot, std::optional<Error> error) {
    Active& active = *in_slot_[slot];
    ServedGeneration out;
    out.admitted_step = active.admitted_step;
    out.finished_step = step_;
    out.final_rng_state = active.rng.state();
    if (error) {
      out.error = std::move(error);
    } else {
      out.result = std::move(active.cursor->result());
      out.result.model_calls = active.calls;
      out.result.final_cache_len = cache_->slot_len(slot);
      const KvWork work = cache_->slot_work(slot);
      out.result.work.prefill_tokens = work.prefill_tokens;
      out.result.work.decode_tokens = work.decode_tokens;
      out.result.work.cache_appends = work.cache_appends;
      out.result.work.qkv_projection_rows = work.qkv_projection_rows;
      out.result.work.cached_attention_score_values = work.attention_score_values;
    }
    (void)session_->ResetSlot(slot);  // in range: cannot fail
    const size_t index = active.index;
    in_slot_[slot].reset();
    Hold(index, std::move(out));
  }

  // Keeps a finished result until every earlier one is delivered (bad_alloc is
  // caught at the top, as AllocationFailed).
  void Hold(size_t index, ServedGeneration served) { held_.emplace(index, std::move(served)); }

  // Every held result whose predecessors have all been delivered, in order.
  Result<void> DeliverInOrder() {
    while (!held_.empty() && held_.begin()->first == next_delivery_) {
      auto node = held_.extract(held_.begin());
      if (auto delivered = deliver_(node.key(), node.mapped()); !delivered) return delivered;
      ++next_delivery_;
    }
    return {};
  }

  const DecoderModel& model_;
  const ModelConfig& config_;
  GenerationRequestSource& source_;
  const ServedCallback& deliver_;
  const StreamOptions& options_;

  std::optional<DecoderKvCache> cache_;
  std::optional<DecoderKvSession> session_;
  size_t slots_ = 0;
  std::vector<std::optional<Active>> in_slot_;
  // One per slot, made when it is first used and configured for each request it
  // serves: its vocabulary-sized buffers are the slot's, not the request's.
  std::vector<std::optional<SamplerChain>> samplers_;
  std::vector<SlotRun> runs_;

  std::optional<GenerationRequest> waiting_;  // the next request, read but not admitted
  bool source_done_ = false;
  size_t next_index_ = 0;      // of the next request admitted
  size_t next_delivery_ = 0;   // of the next result delivered
  std::map<size_t, ServedGeneration> held_;  // finished, waiting for earlier requests
  size_t step_ = 0;
};

// ServeGenerations' source: the caller's span, copied one request at a time.
class SpanSource final : public GenerationRequestSource {
 public:
  explicit SpanSource(std::span<const GenerationRequest> requests) : requests_(requests) {}
  Result<std::optional<GenerationRequest>> Next() override {
    if (next_ == requests_.size()) return std::optional<GenerationRequest>();
    return std::optional<GenerationRequest>(requests_[next_++]);
  }

 private:
  std::span<const GenerationRequest> requests_;
  size_t next_ = 0;
};

}  // namespace

Result<void> ServeGenerationStream(const DecoderModel& model, GenerationRequestSource& source,
                                   const ServedCallback& deliver, const StreamOptions& options) try {
  StreamOptions checked = options;
  checked.max_held_results = std::max<size_t>(1, options.max_held_results);
  RequestDriver driver(model, source, deliver, checked);
  return driver.Run();
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the request driver's state");
}

Result<std::vector<ServedGeneration>> ServeGenerations(const DecoderModel& model,
                                                       std::span<const GenerationRequest> requests,
                                                       const ServeOptions& options) try {
  std::vector<ServedGeneration> served;
  served.reserve(requests.size());
  SpanSource source(requests);
  const ServedCallback collect = [&](size_t, ServedGeneration& out) -> Result<void> {
    served.push_back(std::move(out));
    return {};
  };
  // Every result is kept anyway: hold as many as there are requests.
  StreamOptions stream{options, std::max<size_t>(1, requests.size())};
  if (Result<void> ran = ServeGenerationStream(model, source, collect, stream); !ran) {
    return Fail(std::move(ran.error()));
  }
  return served;
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the request driver's state");
}

}  // namespace kvrt
