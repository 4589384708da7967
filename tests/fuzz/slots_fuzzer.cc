// A slot-schedule driver for batched serving: the input picks the slots, the precision
// and the step row limit, then a sequence of operations: steps over random sets
// of slots (prompt chunks, decode tokens, out-of-range slots, duplicates, bad
// tokens, decodes before the prompt is complete), and per-slot reset, truncate
// and fork. A shadow keeps every slot's tokens and prompt state. Properties:
//   * a committed step gives every run the logits of its slot's token sequence
//     computed alone, one token at a time, bit for bit;
//   * a rejected call leaves the cache equal to its state before the call;
//   * slot lengths, prompt states and the total counters follow the shadow.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "fuzz_check.h"
#include "fuzz_input.h"
#include "kv/decoder_kv_cache.h"
#include "model/decoder_model.h"
#include "session/decoder_kv_session.h"

namespace {

using namespace kvrt;

constexpr size_t kMaxOperations = 64;
constexpr size_t kVocabulary = 23;

const DecoderModel& Model() {
  static const DecoderModel model = [] {
    ModelConfig config = ModelConfig::Create(kVocabulary, 16, 4, 24, 2, 48, 10000.0, 1e-5);
    config.kv_heads = 2;
    SplitMix64 rng(16);
    return *DecoderModel::FromSeed(config, rng);
  }();
  return model;
}

struct ShadowSlot {
  std::vector<uint32_t> tokens;
  bool complete = false;
};

// The logits after the last of `tokens`, computed alone one token at a time.
std::vector<double> Solo(const std::vector<uint32_t>& tokens, Precision precision) {
  DecoderKvCache cache = *DecoderKvCache::Create(Model(), {1, 0, precision});
  EngineOptions engine;
  engine.precision = precision;
  DecoderKvSession session = *Bind(cache, Model(), engine);
  Result<StepOutput> step = session.Prefill(std::span(tokens).first(1));
  for (size_t p = 1; step && p < tokens.size(); ++p) step = session.Decode(tokens[p]);
  KVRT_FUZZ_CHECK(step.has_value(), fuzz::Describe(step));
  return std::vector<double>(step->logits.begin(), step->logits.end());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::FuzzInput input(data, size);
  const size_t slots = 1 + input.Below(4);
  const Precision precision = input.Bit() ? Precision::kF64 : Precision::kF32;
  EngineOptions engine;
  engine.precision = precision;
  engine.max_rows_per_step = 1 + input.Below(12);
  DecoderKvCache cache = *DecoderKvCache::Create(Model(), {slots, 0, precision});
  Result<DecoderKvSession> bound = Bind(cache, Model(), engine);
  KVRT_FUZZ_CHECK(bound.has_value(), fuzz::Describe(bound));
  DecoderKvSession& session = *bound;
  std::vector<ShadowSlot> shadow(slots);
  std::vector<std::vector<uint32_t>> chunks;
  for (size_t op = 0; op < kMaxOperations && !input.empty(); ++op) {
    const DecoderKvCache before = *session.cache().Clone();
    const uint8_t kind = input.Below(6);
    if (kind <= 2) {  // a step
      const size_t count = input.Below(slots + 2);
      std::vector<SlotRun> runs;
      chunks.assign(count, {});
      for (size_t r = 0; r < count; ++r) {
        SlotRun run;
        run.slot = input.Below(slots + 1);  // slots: out of range
        run.phase = input.Bit() ? RunPhase::kDecode : RunPhase::kPrefill;
        run.completes_prompt = input.Bit();
        const size_t n = run.phase == RunPhase::kDecode ? 1 : input.Below(6);
        for (size_t i = 0; i < n; ++i) chunks[r].push_back(input.Below(kVocabulary + 1));
        run.tokens = chunks[r];
        runs.push_back(run);
      }
      Result<SlotStepOutput> out = session.Step(runs);
      if (!out) {
        fuzz::CheckTypedError(out.error());
        KVRT_FUZZ_CHECK(session.cache() == before, "a rejected step changed the cache: " + out.error().Debug());
        continue;
      }
      for (size_t r = 0; r < runs.size(); ++r) {
        ShadowSlot& slot = shadow[runs[r].slot];
        KVRT_FUZZ_CHECK(!slot.complete || runs[r].phase == RunPhase::kDecode, "prefill after a complete prompt");
        slot.tokens.insert(slot.tokens.end(), runs[r].tokens.begin(), runs[r].tokens.end());
        if (runs[r].phase == RunPhase::kPrefill && runs[r].completes_prompt) slot.complete = true;
        const std::vector<double> solo = Solo(slot.tokens, precision);
        KVRT_FUZZ_CHECK(std::memcmp(solo.data(), out->logits.data() + r * kVocabulary,
                                    kVocabulary * sizeof(double)) == 0,
                        "run " + std::to_string(r) + " differs from its solo run");
      }
    } else if (kind == 3) {
      const size_t slot = input.Below(slots + 1);
      Result<void> done = session.ResetSlot(slot);
      if (done) {
        shadow[slot] = {};
      } else {
        KVRT_FUZZ_CHECK(session.cache() == before, fuzz::Describe(done));
      }
    } else if (kind == 4) {
      const size_t slot = input.Below(slots + 1);
      const size_t len = input.Below(50);
      Result<void> done = session.TruncateSlot(slot, len);
      if (done) {
        shadow[slot].tokens.resize(len);
        if (len == 0) shadow[slot].complete = false;
      } else {
        KVRT_FUZZ_CHECK(session.cache() == before, fuzz::Describe(done));
      }
    } else {
      const size_t from = input.Below(slots + 1), to = input.Below(slots + 1);
      Result<void> done = session.ForkSlot(from, to);
      if (done) {
        shadow[to] = shadow[from];
      } else {
        KVRT_FUZZ_CHECK(session.cache() == before, fuzz::Describe(done));
      }
    }
    for (size_t s = 0; s < slots; ++s) {
      KVRT_FUZZ_CHECK(session.cache().slot_len(s) == shadow[s].tokens.size(), "slot length");
      KVRT_FUZZ_CHECK(session.cache().slot_prefill_complete(s) == shadow[s].complete, "prompt state");
    }
    uint64_t forwards = 0;
    for (size_t s = 0; s < slots; ++s) forwards += session.cache().slot_work(s).token_forwards;
    KVRT_FUZZ_CHECK(forwards == session.cache().work().token_forwards, "total counters");
  }
  return 0;
}
