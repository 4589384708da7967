// ServeGenerations: a request driver over the slots of one cache (generation.h).
//
// Every step: admit waiting requests into free slots (in request order, not
// before their arrival step), then one DecoderKvSession::Step with a decode run
// for every slot that has a token to feed and a prompt chunk for slots still
// prefilling, within the engine's row limits (decodes first, so a long prompt
// never stalls the other slots). A run's logits go to its request's cursor;
// a finished request frees its slot at once. A step that fails is retried run by
// run: the steps are batch-invariant, so a run that succeeds alone gives the
// same bits, and only the requests whose own rows fail get the error
// GenerateCached would have given them.
#include <algorithm>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "generate/generation_cursor.h"
#include "kvrt/generation.h"
#include "kv/decoder_kv_cache.h"
#include "session/decoder_kv_session.h"
#include "generate/generate.h"

namespace kvrt {
namespace {

struct Active {
  size_t request = 0;
  std::optional<GenerationCursor> cursor;
  SplitMix64 rng{0};
  size_t fed = 0;       // prompt tokens in the slot
  size_t calls = 0;     // successful model calls (the prefill, then decodes)
  bool decoding = false;
};

}  // namespace

Result<std::vector<ServedGeneration>> ServeGenerations(const DecoderModel& model,
                                                       std::span<const GenerationRequest> requests,
                                                       const ServeOptions& options) try {
  const ModelConfig& config = model.config();
  const size_t vocabulary = config.vocabulary_size;
  std::vector<ServedGeneration> served(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) served[i].final_rng_state = requests[i].rng_state;

  CacheOptions cache_options;
  cache_options.batch_size = std::max<size_t>(1, options.slots);
  cache_options.capacity = options.capacity;
  cache_options.precision = options.engine.precision;
  Result<DecoderKvCache> created = DecoderKvCache::Create(model, cache_options);
  if (!created) return Fail(std::move(created.error()).Wrap(ErrorCode::kCache));
  DecoderKvCache cache = std::move(*created);
  Result<DecoderKvSession> bound = Bind(cache, model, options.engine);
  if (!bound) return Fail(std::move(bound.error()).Wrap(ErrorCode::kCache));
  DecoderKvSession& session = *bound;
  const size_t slots = cache_options.batch_size;

  std::vector<std::optional<Active>> in_slot(slots);
  std::vector<SlotRun> runs;
  std::vector<size_t> run_slots;
  runs.reserve(slots);
  run_slots.reserve(slots);
  size_t next = 0, step = 0;

  auto finish = [&](size_t slot, std::optional<Error> error) {
    Active& active = *in_slot[slot];
    ServedGeneration& out = served[active.request];
    out.finished_step = step;
    out.final_rng_state = active.rng.state();
    if (error) {
      out.error = std::move(error);
    } else {
      out.result = std::move(active.cursor->result());
      out.result.model_calls = active.calls;
      out.result.final_cache_len = cache.slot_len(slot);
      const KvWork work = cache.slot_work(slot);
      out.result.work.prefill_tokens = work.prefill_tokens;
      out.result.work.decode_tokens = work.decode_tokens;
      out.result.work.cache_appends = work.cache_appends;
      out.result.work.qkv_projection_rows = work.qkv_projection_rows;
      out.result.work.cached_attention_score_values = work.attention_score_values;
    }
    (void)session.ResetSlot(slot);  // in range: cannot fail
    in_slot[slot].reset();
  };

  // The logits of a run: the cursor samples; the request goes on or finishes.
  auto deliver = [&](size_t slot, std::span<const double> logits) {
    Active& active = *in_slot[slot];
    ++active.calls;
    Result<bool> more = active.cursor->Advance(logits, active.rng, {});
    if (!more) return finish(slot, std::move(more.error()));
    if (!*more) return finish(slot, std::nullopt);
    active.decoding = true;
  };

  while (true) {
    // Admission, in request order.
    for (size_t slot = 0; slot < slots && next < requests.size(); ++slot) {
      if (in_slot[slot]) continue;
      while (next < requests.size() && requests[next].arrival_step <= step) {
        const GenerationRequest& request = requests[next];
        ServedGeneration& out = served[next];
        out.admitted_step = out.finished_step = step;
        if (Result<void> valid = ValidateCachedRequest(config, request.prompt, request.config);
            !valid) {
          out.error = std::move(valid.error());
          ++next;
          continue;
        }
        if (const size_t wanted = ContextCapacity(config, request.config); wanted > cache.capacity()) {
          out.error = Error(ErrorCode::kCapacityExceedsPositions,
                            {{"capacity", uint64_t{wanted}}, {"max_positions", uint64_t{cache.capacity()}}},
                            "request context of " + std::to_string(wanted) +
                                " tokens exceeds the slots' capacity of " + std::to_string(cache.capacity()));
          ++next;
          continue;
        }
        Result<GenerationCursor> cursor =
            GenerationCursor::Create(config, request.config, request.prompt);
        if (!cursor) {
          out.error = std::move(cursor.error());
          ++next;
          continue;
        }
        if (request.config.max_new_tokens == 0) {  // no cache, no model call, no draw
          out.result = std::move(cursor->result());
          ++next;
          continue;
        }
        in_slot[slot].emplace();
        in_slot[slot]->request = next;
        in_slot[slot]->cursor.emplace(std::move(*cursor));
        in_slot[slot]->rng = SplitMix64(request.rng_state);
        ++next;
        break;
      }
    }
    bool any_active = false;
    for (const auto& active : in_slot) any_active = any_active || active.has_value();
    if (!any_active) {
      if (next >= requests.size()) break;
      step = std::max(step + 1, requests[next].arrival_step);  // idle until the next arrival
      continue;
    }

    // The step's runs: every decode, then prompt chunks within the limits.
    runs.clear();
    run_slots.clear();
    size_t budget = session.max_rows_per_step();
    for (size_t slot = 0; slot < slots; ++slot) {
      if (!in_slot[slot] || !in_slot[slot]->decoding || budget == 0) continue;
      const GenerationCursor& cursor = *in_slot[slot]->cursor;
      runs.push_back({slot, cursor.prefix().last(1), RunPhase::kDecode, true});
      run_slots.push_back(slot);
      --budget;
    }
    for (size_t slot = 0; slot < slots; ++slot) {
      if (!in_slot[slot] || in_slot[slot]->decoding || budget == 0) continue;
      Active& active = *in_slot[slot];
      const std::span<const uint32_t> prompt = requests[active.request].prompt;
      size_t chunk = std::min({prompt.size() - active.fed, budget, session.max_rows_per_run()});
      if (options.prefill_chunk != 0) chunk = std::min(chunk, options.prefill_chunk);
      const bool last = active.fed + chunk == prompt.size();
      runs.push_back({slot, prompt.subspan(active.fed, chunk), RunPhase::kPrefill, last});
      run_slots.push_back(slot);
      budget -= chunk;
    }
    if (runs.empty()) {  // cannot happen: an active slot always has rows and budget ≥ slots
      return Fail(ErrorCode::kInvariantViolation, {}, "the request driver built an empty step");
    }

    auto after_run = [&](size_t r, std::span<const double> logits) {
      const SlotRun& run = runs[r];
      Active& active = *in_slot[run.slot];
      if (run.phase == RunPhase::kPrefill) {
        active.fed += run.tokens.size();
        if (!run.completes_prompt) return;
      }
      deliver(run.slot, logits);
    };
    Result<SlotStepOutput> out = session.Step(runs);
    if (out) {
      for (size_t r = 0; r < runs.size(); ++r) {
        after_run(r, out->logits.subspan(r * vocabulary, vocabulary));
      }
    } else {
      // Some run's rows failed: find which, run by run (invariant, so the bits of
      // the runs that succeed are the ones they would have had in the step).
      for (size_t r = 0; r < runs.size(); ++r) {
        Result<SlotStepOutput> alone = session.Step(std::span(runs).subspan(r, 1));
        if (alone) {
          after_run(r, alone->logits.subspan(0, vocabulary));
        } else {
          finish(runs[r].slot, std::move(alone.error()).Wrap(ErrorCode::kCache));
        }
      }
    }
    ++step;
  }
  return served;
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the request driver's state");
}

}  // namespace kvrt
