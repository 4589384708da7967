// Batch invariance of the slot steps (batched serving): every sequence's logits are the
// same bits whether it runs alone or beside others, in any slot, with any thread
// count, and whether its prompt is prefilled in one step, in chunks of any size,
// or one token at a time; per-slot reset, truncate and fork; and the two-phase
// commit of a step over several slots.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "core/allocation_faults.h"
#include "kv/decoder_kv_cache.h"
#include "model/decoder_model.h"
#include "session/decoder_kv_session.h"
#include "kvrt/simd/prefix_attention.h"
#include "kvrt/threading/thread_pool.h"

namespace kvrt {
namespace {

constexpr size_t kTile = simd::kPrefixAttentionTile;

// Small but with everything that matters: two query heads per key/value head,
// two layers, a context past two attention tiles.
DecoderModel InvarianceModel() {
  ModelConfig config = ModelConfig::Create(97, 64, 4, 96, 2, 2 * kTile + 100, 10000.0, 1e-5);
  config.kv_heads = 2;
  SplitMix64 rng(1616);
  return *DecoderModel::FromSeed(config, rng);
}

EngineOptions Fast(Precision precision, threading::ThreadPool* pool, size_t max_rows = 512) {
  EngineOptions options;
  options.backend = Backend::kFast;
  options.precision = precision;
  options.pool = pool;
  options.max_rows_per_step = max_rows;
  return options;
}

std::vector<uint32_t> RandomTokens(std::mt19937_64& rng, size_t n, uint32_t vocabulary) {
  std::vector<uint32_t> tokens(n);
  for (uint32_t& t : tokens) t = static_cast<uint32_t>(rng() % vocabulary);
  return tokens;
}

using Logits = std::vector<double>;

bool SameBits(std::span<const double> a, std::span<const double> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// The solo run, one token at a time: the logits after every position.
std::vector<Logits> SoloRowByRow(const DecoderModel& model, const std::vector<uint32_t>& tokens,
                                 Precision precision) {
  DecoderKvCache cache = *DecoderKvCache::Create(model, {1, 0, precision});
  DecoderKvSession session = *Bind(cache, model, Fast(precision, nullptr));
  std::vector<Logits> out;
  Result<StepOutput> step = session.Prefill(std::span(tokens).first(1));
  EXPECT_TRUE(step);
  out.emplace_back(step->logits.begin(), step->logits.end());
  for (size_t p = 1; p < tokens.size(); ++p) {
    step = session.Decode(tokens[p]);
    EXPECT_TRUE(step);
    out.emplace_back(step->logits.begin(), step->logits.end());
  }
  return out;
}

// The solo run with the whole prompt in one prefill, then decodes.
std::vector<Logits> SoloPrefilled(const DecoderModel& model, const std::vector<uint32_t>& tokens,
                                  size_t prompt, Precision precision) {
  DecoderKvCache cache = *DecoderKvCache::Create(model, {1, 0, precision});
  DecoderKvSession session = *Bind(cache, model, Fast(precision, nullptr));
  std::vector<Logits> out;
  Result<StepOutput> step = session.Prefill(std::span(tokens).first(prompt));
  EXPECT_TRUE(step);
  out.emplace_back(step->logits.begin(), step->logits.end());
  for (size_t p = prompt; p < tokens.size(); ++p) {
    step = session.Decode(tokens[p]);
    EXPECT_TRUE(step);
    out.emplace_back(step->logits.begin(), step->logits.end());
  }
  return out;
}

struct Sequence {
  std::vector<uint32_t> tokens;  // prompt, then the tokens fed as decodes
  size_t prompt = 0;
  std::vector<Logits> solo;  // row by row: logits after every position
  size_t fed = 0;            // tokens already in its slot
  std::optional<size_t> slot;
  size_t checked = 0;
};

// One random schedule: sequences join free slots at random steps, feed their
// prompts in random chunks beside other slots' decodes, sit out random steps and
// leave when done (slot reset or truncated to 0). Every run's logits are
// compared with the solo run at that position.
void RunSchedule(uint64_t seed, Precision precision, size_t threads) {
  const DecoderModel model = InvarianceModel();
  const uint32_t vocabulary = static_cast<uint32_t>(model.config().vocabulary_size);
  std::mt19937_64 rng(seed);
  const size_t slots = 1 + rng() % 5;
  const size_t max_rows = (rng() % 2 == 0) ? 512 : std::max<size_t>(slots, 5 + rng() % 60);
  std::vector<Sequence> sequences(2 * slots + rng() % 3);
  for (Sequence& s : sequences) {
    s.prompt = 1 + (rng() % 8 == 0 ? rng() % (kTile + 80) : rng() % 40);
    s.tokens = RandomTokens(rng, s.prompt + rng() % 12, vocabulary);
    s.solo = SoloRowByRow(model, s.tokens, precision);
  }
  std::unique_ptr<threading::ThreadPool> pool;
  if (threads > 1) pool = std::make_unique<threading::ThreadPool>(threads);
  DecoderKvCache cache = *DecoderKvCache::Create(model, {slots, 0, precision});
  DecoderKvSession session = *Bind(cache, model, Fast(precision, pool.get(), max_rows));
  const size_t step_rows = session.max_rows_per_step();
  std::vector<Sequence*> in_slot(slots, nullptr);
  size_t next = 0, done = 0;
  std::vector<SlotRun> runs;
  std::vector<Sequence*> owners;
  for (size_t iteration = 0; done < sequences.size(); ++iteration) {
    ASSERT_LT(iteration, 100000u) << "schedule does not progress";
    // Joins.
    for (size_t slot = 0; slot < slots && next < sequences.size(); ++slot) {
      if (in_slot[slot] == nullptr && rng() % 3 != 0) {
        in_slot[slot] = &sequences[next++];
        in_slot[slot]->slot = slot;
      }
    }
    // Runs of the step, in a random slot order.
    runs.clear();
    owners.clear();
    std::vector<size_t> order(slots);
    for (size_t i = 0; i < slots; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    size_t budget = step_rows;
    for (size_t slot : order) {
      Sequence* s = in_slot[slot];
      if (s == nullptr || budget == 0 || rng() % 5 == 0) continue;
      SlotRun run;
      run.slot = slot;
      if (s->fed < s->prompt) {
        const size_t left = s->prompt - s->fed;
        const size_t chunk = std::min({left, budget, 1 + static_cast<size_t>(rng() % (left + 2))});
        run.phase = RunPhase::kPrefill;
        run.tokens = std::span(s->tokens).subspan(s->fed, chunk);
        run.completes_prompt = s->fed + chunk == s->prompt;
      } else {
        run.phase = RunPhase::kDecode;
        run.tokens = std::span(s->tokens).subspan(s->fed, 1);
      }
      budget -= run.tokens.size();
      runs.push_back(run);
      owners.push_back(s);
    }
    if (!runs.empty()) {
      Result<SlotStepOutput> out = session.Step(runs);
      ASSERT_TRUE(out) << out.error().message();
      const size_t v = vocabulary;
      for (size_t r = 0; r < runs.size(); ++r) {
        Sequence* s = owners[r];
        s->fed += runs[r].tokens.size();
        const size_t position = s->fed - 1;
        ASSERT_TRUE(SameBits(out->logits.subspan(r * v, v), s->solo[position]))
            << "seed " << seed << " slot " << runs[r].slot << " position " << position;
        ++s->checked;
        ASSERT_EQ(session.cache().slot_len(runs[r].slot), s->fed);
      }
    }
    // Leaves.
    for (size_t slot = 0; slot < slots; ++slot) {
      Sequence* s = in_slot[slot];
      if (s != nullptr && s->fed == s->tokens.size()) {
        ASSERT_TRUE(rng() % 2 == 0 ? session.ResetSlot(slot) : session.TruncateSlot(slot, 0));
        ASSERT_EQ(session.cache().slot_len(slot), 0u);
        in_slot[slot] = nullptr;
        ++done;
      }
    }
  }
  for (const Sequence& s : sequences) EXPECT_GT(s.checked, 0u);
  EXPECT_EQ(session.cache().work(), KvWork{});  // every slot left (and was zeroed)
}

TEST(BatchingTest, SoloPrefillEqualsSoloRowByRow) {
  const DecoderModel model = InvarianceModel();
  std::mt19937_64 rng(7);
  for (Precision precision : {Precision::kF32, Precision::kF64}) {
    for (size_t prompt : {size_t{1}, size_t{2}, size_t{17}, kTile - 1, kTile, kTile + 1, kTile + 40}) {
      const std::vector<uint32_t> tokens = RandomTokens(rng, prompt + 5, 97);
      const std::vector<Logits> serial = SoloRowByRow(model, tokens, precision);
      const std::vector<Logits> prefilled = SoloPrefilled(model, tokens, prompt, precision);
      for (size_t i = 0; i < prefilled.size(); ++i) {
        ASSERT_TRUE(SameBits(prefilled[i], serial[prompt - 1 + i]))
            << PrecisionName(precision) << " prompt " << prompt << " output " << i;
      }
    }
  }
}

TEST(BatchingTest, RandomSchedulesGiveEverySequenceItsSoloLogits) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    for (Precision precision : {Precision::kF32, Precision::kF64}) {
      RunSchedule(seed, precision, 1 + seed % 4);
      if (HasFatalFailure()) return;
    }
  }
}

// Fork, truncate and reset of one slot leave the others alone, and a forked or
// rewound slot continues exactly like a solo run of its new token sequence.
TEST(BatchingTest, ForkAndTruncateContinueLikeSoloRuns) {
  const DecoderModel model = InvarianceModel();
  std::mt19937_64 rng(99);
  threading::ThreadPool pool(2);
  for (Precision precision : {Precision::kF32, Precision::kF64}) {
    DecoderKvCache cache = *DecoderKvCache::Create(model, {3, 0, precision});
    DecoderKvSession session = *Bind(cache, model, Fast(precision, &pool));
    const std::vector<uint32_t> prefix = RandomTokens(rng, 40, 97);
    ASSERT_TRUE(session.Step(std::vector<SlotRun>{{0, prefix, RunPhase::kPrefill, true}}));
    ASSERT_TRUE(session.Step(std::vector<SlotRun>{{2, std::span(prefix).first(3), RunPhase::kPrefill, true}}));
    const DecoderKvCache before = *session.cache().Clone();
    ASSERT_TRUE(session.ForkSlot(0, 1));
    EXPECT_EQ(session.cache().slot_len(1), 40u);
    EXPECT_EQ(session.cache().slot_work(1), KvWork{});
    EXPECT_EQ(session.cache().work(), before.work());
    // Rewind slot 0 to 25 rows and feed other tokens; continue slot 1 as it was.
    ASSERT_TRUE(session.TruncateSlot(0, 25));
    const std::vector<uint32_t> a = RandomTokens(rng, 4, 97), b = RandomTokens(rng, 4, 97);
    std::vector<uint32_t> solo_a(prefix.begin(), prefix.begin() + 25), solo_b = prefix;
    solo_a.insert(solo_a.end(), a.begin(), a.end());
    solo_b.insert(solo_b.end(), b.begin(), b.end());
    const std::vector<Logits> expect_a = SoloRowByRow(model, solo_a, precision);
    const std::vector<Logits> expect_b = SoloRowByRow(model, solo_b, precision);
    for (size_t i = 0; i < 4; ++i) {
      Result<SlotStepOutput> out = session.Step(std::vector<SlotRun>{
          {1, std::span(b).subspan(i, 1), RunPhase::kDecode, true},
          {0, std::span(a).subspan(i, 1), RunPhase::kDecode, true}});
      ASSERT_TRUE(out) << out.error().message();
      const size_t v = 97;
      EXPECT_TRUE(SameBits(out->logits.subspan(0, v), expect_b[40 + i])) << i;
      EXPECT_TRUE(SameBits(out->logits.subspan(v, v), expect_a[25 + i])) << i;
    }
    EXPECT_EQ(session.cache().slot_len(2), 3u);  // untouched throughout
    EXPECT_TRUE(session.cache().layer(0)->slot_len(2) == 3u);
  }
}

TEST(BatchingTest, SlotOperationsReportTypedErrorsAndChangeNothing) {
  const DecoderModel model = InvarianceModel();
  DecoderKvCache cache = *DecoderKvCache::Create(model, {2, 0, Precision::kF32});
  DecoderKvSession session = *Bind(cache, model, Fast(Precision::kF32, nullptr, 8));
  const std::vector<uint32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  ASSERT_TRUE(session.Step(std::vector<SlotRun>{{0, std::span(tokens).first(3), RunPhase::kPrefill, false}}));
  const DecoderKvCache before = *session.cache().Clone();
  auto error_of = [&](auto result) { return result ? std::string("ok") : result.error().Debug(); };
  EXPECT_EQ(error_of(session.Step({})), "EmptyStep");
  EXPECT_EQ(error_of(session.Step(std::vector<SlotRun>{{2, tokens, RunPhase::kPrefill, true}})),
            "SlotOutOfRange { slot: 2, slots: 2 }");
  EXPECT_EQ(error_of(session.Step(std::vector<SlotRun>{{1, std::span(tokens).first(1), RunPhase::kPrefill, true},
                                                       {1, std::span(tokens).first(1), RunPhase::kPrefill, true}})),
            "DuplicateSlot { slot: 1 }");
  // Slot 0 is still taking its prompt: a decode is refused.
  EXPECT_EQ(error_of(session.Step(std::vector<SlotRun>{{0, std::span(tokens).first(1), RunPhase::kDecode, true}})),
            "SlotRequest { slot: 0, source: DecodeRequiresPrefill }");
  const std::vector<uint32_t> bad = {4, 200};
  EXPECT_EQ(error_of(session.Step(std::vector<SlotRun>{{0, bad, RunPhase::kPrefill, true}})),
            "SlotRequest { slot: 0, source: PromptTokenOutOfBounds { position: 4, token_id: 200, "
            "vocabulary_size: 97 } }");
  EXPECT_EQ(error_of(session.Step(std::vector<SlotRun>{{1, tokens, RunPhase::kPrefill, true}})),
            "StepTooLarge { rows: 9, max_rows: 8 }");
  EXPECT_EQ(error_of(session.TruncateSlot(0, 4)), "TruncateBeyondLength { slot: 0, len: 4, slot_len: 3 }");
  EXPECT_EQ(error_of(session.ForkSlot(1, 1)), "ForkOntoItself { slot: 1 }");
  EXPECT_EQ(error_of(session.ForkSlot(0, 5)), "SlotOutOfRange { slot: 5, slots: 2 }");
  EXPECT_EQ(error_of(session.ResetSlot(9)), "SlotOutOfRange { slot: 9, slots: 2 }");
  EXPECT_TRUE(session.cache() == before);
  // The equal-length batch calls see the slot mid-prompt.
  EXPECT_EQ(error_of(session.DecodeBatch(std::vector<uint32_t>{1, 1})), "DecodeRequiresPrefill");
  EXPECT_EQ(error_of(session.PrefillBatch(std::vector<uint32_t>{1, 1})), "PrefillRequiresEmpty { len: 3 }");
  EXPECT_TRUE(session.cache() == before);
}

// A model whose block-0 query and key weights are huge along a feature token 0
// lacks: any other token overflows its attention score (NaN from the softmax).
DecoderModel PoisonedModel(double huge) {
  SplitMix64 rng(2024);
  DecoderModel model =
      *DecoderModel::FromSeed(ModelConfig::Create(300, 96, 3, 160, 2, 80, 10000.0, 1e-5), rng);
  std::vector<ParameterUpdate> updates;
  std::vector<double> embedding(model.embedding().values().begin(), model.embedding().values().end());
  embedding[0] = 0.0;
  updates.push_back({0, embedding});
  for (BlockSlot slot : {BlockSlot::kQuery, BlockSlot::kKey}) {
    const size_t index = BlockParameterIndex(0, slot);
    std::vector<double> weights(model.parameter(index).values().begin(),
                                model.parameter(index).values().end());
    for (size_t out = 0; out < 96; ++out) weights[out] = huge;
    updates.push_back({index, weights});
  }
  EXPECT_TRUE(model.UpdateParameters(updates));
  return model;
}

TEST(BatchingTest, AFailedStepAdvancesNoSlot) {
  threading::ThreadPool pool(2);
  for (const auto& [precision, huge] : {std::pair{Precision::kF32, 1e30}, {Precision::kF64, 1e200}}) {
    const DecoderModel model = PoisonedModel(huge);
    DecoderKvCache cache = *DecoderKvCache::Create(model, {3, 0, precision});
    DecoderKvSession session = *Bind(cache, model, Fast(precision, &pool));
    const std::vector<uint32_t> zeros(6, 0), poisoned = {0, 0, 5, 0};
    ASSERT_TRUE(session.Step(std::vector<SlotRun>{{0, zeros, RunPhase::kPrefill, true},
                                                  {2, std::span(zeros).first(2), RunPhase::kPrefill, false}}));
    const DecoderKvCache before = *session.cache().Clone();
    // Slot 0 decodes a safe token, slot 1 starts a prompt, slot 2 continues its
    // prompt with a poisoned token in the middle of the step's rows.
    const std::vector<SlotRun> step = {{0, std::span(zeros).first(1), RunPhase::kDecode, true},
                                       {1, std::span(zeros).first(3), RunPhase::kPrefill, true},
                                       {2, poisoned, RunPhase::kPrefill, true}};
    Result<SlotStepOutput> failed = session.Step(step);
    ASSERT_FALSE(failed) << PrecisionName(precision);
    EXPECT_TRUE(session.cache() == before) << PrecisionName(precision);  // storage included
    // With every kvrt allocation failing, a step still runs (it allocates
    // nothing) and a failing one still leaves the snapshot.
    memory::FailAllocationsAfter(0);
    Result<SlotStepOutput> again = session.Step(step);
    const std::vector<SlotRun> safe(step.begin(), step.begin() + 2);
    Result<SlotStepOutput> good = session.Step(safe);
    memory::ClearAllocationFailures();
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().Debug(), failed.error().Debug());
    ASSERT_TRUE(good) << good.error().message();
    EXPECT_EQ(session.cache().slot_len(0), 7u);
    EXPECT_EQ(session.cache().slot_len(1), 3u);
    EXPECT_EQ(session.cache().slot_len(2), 2u);
  }
}

TEST(BatchingTest, CountersArePerSlotAndSumToTheTotal) {
  const DecoderModel model = InvarianceModel();
  DecoderKvCache cache = *DecoderKvCache::Create(model, {2, 0, Precision::kF64});
  DecoderKvSession session = *Bind(cache, model, Fast(Precision::kF64, nullptr));
  const std::vector<uint32_t> tokens = {1, 2, 3, 4};
  ASSERT_TRUE(session.Step(std::vector<SlotRun>{{0, std::span(tokens).first(3), RunPhase::kPrefill, true},
                                                {1, std::span(tokens).first(1), RunPhase::kPrefill, true}}));
  ASSERT_TRUE(session.Step(std::vector<SlotRun>{{0, std::span(tokens).subspan(3, 1), RunPhase::kDecode, true}}));
  const KvWork zero = session.cache().slot_work(0), one = session.cache().slot_work(1);
  // L·H·(pos + 1) per row: L 2, H 4.
  EXPECT_EQ(zero.attention_score_values, 8u * (1 + 2 + 3 + 4));
  EXPECT_EQ(zero.prefill_tokens, 3u);
  EXPECT_EQ(zero.decode_tokens, 1u);
  EXPECT_EQ(one.token_forwards, 1u);
  EXPECT_EQ(session.cache().work().token_forwards, 5u);
  EXPECT_EQ(session.cache().work().cache_appends, 10u);
  ASSERT_TRUE(session.ResetSlot(0));
  EXPECT_EQ(session.cache().work(), one);
}

}  // namespace
}  // namespace kvrt
