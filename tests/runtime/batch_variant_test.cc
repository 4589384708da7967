// The opt-in batch-variant mode (EngineOptions::batch_invariant = false): its
// logits stay within the fast engine's tolerances (f64 1e-12, f32 1e-4) of the
// reference and of the invariant default on every golden case and on prompts of
// several query and key tiles, chunked or not, beside other slots; they are the
// same bits for 1–4 threads; the mode allocates nothing more on a step than the
// default. That the default keeps its bits is the batching and fast engine
// tests' job (they run unchanged).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "allocation_counter.h"
#include "engine_test_support.h"
#include "golden_case.h"
#include "kv/decoder_kv_cache.h"
#include "model/decoder_model.h"
#include "session/decoder_kv_session.h"
#include "kvrt/simd/query_tile_attention.h"
#include "kvrt/threading/thread_pool.h"

namespace kvrt {
namespace {

using testing::F64Vector;
using testing::GoldenModel;
using testing::Ids;
using testing::Json;
using testing::MaxAbsDiff;
using testing::SeededTokens;

using Logits = std::vector<double>;

EngineOptions Fast(Precision precision, bool invariant, threading::ThreadPool* pool = nullptr,
                   size_t max_rows = EngineOptions::kDefaultMaxRowsPerStep) {
  EngineOptions options;
  options.backend = Backend::kFast;
  options.precision = precision;
  options.pool = pool;
  options.max_rows_per_step = max_rows;
  options.batch_invariant = invariant;
  return options;
}

double Tolerance(Precision precision) { return precision == Precision::kF64 ? 1e-12 : 1e-4; }

TEST(BatchVariantTest, TheDefaultIsBatchInvariant) {
  EXPECT_TRUE(EngineOptions{}.batch_invariant);
  EXPECT_TRUE(ReferenceEngine().batch_invariant);
}

class BatchVariantGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BatchVariantGoldenTest, StaysWithinTheToleranceOfTheReferenceAndTheInvariantMode) {
  const Json golden = testing::LoadJson(GetParam());
  const DecoderModel model = GoldenModel(golden);
  threading::ThreadPool pool(2);
  for (const Json& prompt : golden.at("prompts")) {
    const std::vector<uint32_t> ids = Ids(prompt.at("prompt"));
    const std::vector<uint32_t> continuation = Ids(prompt.at("continuation"));
    for (Precision precision : {Precision::kF64, Precision::kF32}) {
      const std::vector<Logits> variant = testing::ChunkedSessionLogits(model, ids, continuation, Fast(precision, false, &pool));
      const std::vector<Logits> invariant = testing::ChunkedSessionLogits(model, ids, continuation, Fast(precision, true, &pool));
      ASSERT_EQ(variant.size(), prompt.at("full_forward").size());
      for (size_t k = 0; k < variant.size(); ++k) {
        const Logits reference = F64Vector(prompt.at("full_forward")[k].at("logits"));
        EXPECT_LE(MaxAbsDiff(variant[k], reference), Tolerance(precision))
            << GetParam() << " " << PrecisionName(precision) << " step " << k;
        EXPECT_LE(MaxAbsDiff(variant[k], invariant[k]), Tolerance(precision))
            << GetParam() << " " << PrecisionName(precision) << " step " << k;
      }
    }
  }
}

TEST_P(BatchVariantGoldenTest, IsBitIdenticalForOneToFourThreads) {
  const Json golden = testing::LoadJson(GetParam());
  const DecoderModel model = GoldenModel(golden);
  const Json& prompt = golden.at("prompts")[0];
  const std::vector<uint32_t> ids = Ids(prompt.at("prompt")), continuation = Ids(prompt.at("continuation"));
  for (Precision precision : {Precision::kF32, Precision::kF64}) {
    const std::vector<Logits> serial = testing::ChunkedSessionLogits(model, ids, continuation, Fast(precision, false));
    for (size_t threads : {1, 2, 3, 4}) {
      threading::ThreadPool pool(threads);
      EXPECT_EQ(testing::ChunkedSessionLogits(model, ids, continuation, Fast(precision, false, &pool)), serial)
          << threads << " threads, " << PrecisionName(precision);
    }
  }
}

std::string CaseName(const ::testing::TestParamInfo<std::string>& case_info) {
  return std::filesystem::path(case_info.param).stem().string();
}

INSTANTIATE_TEST_SUITE_P(PublicGoldenCases, BatchVariantGoldenTest, ::testing::ValuesIn(testing::GoldenCasePaths()),
                         CaseName);

constexpr uint32_t kVocabulary = 211;  // LongModel's

// Two query heads per key/value head, 2 layers, a context for prompts of several
// query tiles (kQueryTileRows) and many key tiles.
DecoderModel LongModel() {
  ModelConfig config = ModelConfig::Create(kVocabulary, 64, 4, 96, 2, 3 * simd::kQueryTileRows + 40, 10000.0, 1e-5);
  config.kv_heads = 2;
  SplitMix64 rng(1717);
  return *DecoderModel::FromSeed(config, rng);
}

TEST(BatchVariantTest, LongChunkedPrefillsStayWithinToleranceAndIgnoreTheThreadCount) {
  const DecoderModel model = LongModel();
  const std::vector<uint32_t> prompt = SeededTokens(2 * simd::kQueryTileRows + 29, 3, kVocabulary);
  const std::vector<uint32_t> continuation = {5, 17, 200};
  const std::vector<Logits> reference = testing::ChunkedSessionLogits(model, prompt, continuation, ReferenceEngine());
  for (Precision precision : {Precision::kF64, Precision::kF32}) {
    const std::vector<Logits> invariant = testing::ChunkedSessionLogits(model, prompt, continuation, Fast(precision, true));
    for (size_t max_rows : {size_t{512}, size_t{70}, size_t{9}}) {
      const std::vector<Logits> serial =
          testing::ChunkedSessionLogits(model, prompt, continuation, Fast(precision, false, nullptr, max_rows));
      ASSERT_EQ(serial.size(), reference.size());
      for (size_t k = 0; k < serial.size(); ++k) {
        EXPECT_LE(MaxAbsDiff(serial[k], reference[k]), Tolerance(precision))
            << PrecisionName(precision) << " rows " << max_rows << " step " << k;
        EXPECT_LE(MaxAbsDiff(serial[k], invariant[k]), Tolerance(precision))
            << PrecisionName(precision) << " rows " << max_rows << " step " << k;
      }
      for (size_t threads : {2, 3, 4}) {
        threading::ThreadPool pool(threads);
        EXPECT_EQ(testing::ChunkedSessionLogits(model, prompt, continuation, Fast(precision, false, &pool, max_rows)), serial)
            << PrecisionName(precision) << " rows " << max_rows << ", " << threads << " threads";
      }
    }
  }
}

// Prefill chunks of two slots beside a third slot's decode, in one step.
std::vector<Logits> MixedStep(const DecoderModel& model, const std::vector<std::vector<uint32_t>>& prompts,
                              const EngineOptions& engine) {
  DecoderKvCache cache = *DecoderKvCache::Create(model, {3, 0, engine.precision});
  DecoderKvSession session = *Bind(cache, model, engine);
  Result<SlotStepOutput> first =
      session.Step(std::vector<SlotRun>{{2, std::span(prompts[2]).first(5), RunPhase::kPrefill, true}});
  EXPECT_TRUE(first) << first.error().message();
  Result<SlotStepOutput> out =
      session.Step(std::vector<SlotRun>{{0, prompts[0], RunPhase::kPrefill, true},
                                        {2, std::span(prompts[2]).subspan(5, 1), RunPhase::kDecode, true},
                                        {1, prompts[1], RunPhase::kPrefill, true}});
  std::vector<Logits> logits;
  if (!out) {
    ADD_FAILURE() << out.error().message();
    return logits;
  }
  const size_t v = model.config().vocabulary_size;
  for (size_t r = 0; r < 3; ++r) logits.emplace_back(out->logits.begin() + r * v, out->logits.begin() + (r + 1) * v);
  return logits;
}

TEST(BatchVariantTest, SlotsInOneStepStayWithinToleranceOfTheReference) {
  const DecoderModel model = LongModel();
  const std::vector<std::vector<uint32_t>> prompts = {
      SeededTokens(90, 7, kVocabulary), SeededTokens(13, 8, kVocabulary), SeededTokens(6, 9, kVocabulary)};
  // Each run's sequence alone on the reference engine.
  const std::vector<uint32_t> decoded_prefix(prompts[2].begin(), prompts[2].begin() + 5);
  const std::vector<Logits> reference = {
      testing::ChunkedSessionLogits(model, prompts[0], {}, ReferenceEngine()).back(),
      testing::ChunkedSessionLogits(model, decoded_prefix, {prompts[2][5]}, ReferenceEngine()).back(),
      testing::ChunkedSessionLogits(model, prompts[1], {}, ReferenceEngine()).back()};
  for (Precision precision : {Precision::kF64, Precision::kF32}) {
    const std::vector<Logits> serial = MixedStep(model, prompts, Fast(precision, false));
    for (size_t r = 0; r < 3; ++r) {
      EXPECT_LE(MaxAbsDiff(serial[r], reference[r]), Tolerance(precision)) << PrecisionName(precision) << " run " << r;
    }
    threading::ThreadPool pool(3);
    EXPECT_EQ(MixedStep(model, prompts, Fast(precision, false, &pool)), serial) << PrecisionName(precision);
  }
}

// Heap allocations of a prefill and a decode after a warm-up prefill (caller and workers).
uint64_t PrefillAllocations(const DecoderModel& model, const std::vector<uint32_t>& prompt,
                            const EngineOptions& engine) {
  CacheOptions cache_options;
  cache_options.precision = engine.precision;
  return testing::StepAllocations(model, prompt, engine, cache_options);
}

TEST(BatchVariantTest, AllocatesNoMoreOnAStepThanTheInvariantMode) {
  const DecoderModel model = LongModel();
  const std::vector<uint32_t> prompt = SeededTokens(150, 11, kVocabulary);
  threading::ThreadPool pool(2);
  for (Precision precision : {Precision::kF32, Precision::kF64}) {
    EXPECT_EQ(PrefillAllocations(model, prompt, Fast(precision, false, &pool)),
              PrefillAllocations(model, prompt, Fast(precision, true, &pool)))
        << PrecisionName(precision);
  }
}

}  // namespace
}  // namespace kvrt
