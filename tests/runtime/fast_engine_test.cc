// The fast engine against the reference: f64 within 1e-12 and f32 within 1e-4 of
// the reference logits on every golden case, bit-identical results for 1–4
// threads, batched prefill vs row-by-row, batches of sequences vs one at a time,
// the two-phase commit under failure, and no heap allocation while decoding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <thread>

#include "allocation_counter.h"
#include "engine_test_support.h"
#include "golden_case.h"
#include "kv/decoder_kv_cache.h"
#include "model/decoder_model.h"
#include "engine/reference/complete_prefix.h"
#include "session/decoder_kv_session.h"
#include "kvrt/threading/thread_pool.h"

namespace kvrt {
namespace {

using testing::F64Vector;
using testing::GoldenModel;
using testing::Ids;
using testing::MaxAbsDiff;
using testing::Json;

EngineOptions Fast(Precision precision, threading::ThreadPool* pool = nullptr) {
  EngineOptions options;
  options.backend = Backend::kFast;
  options.precision = precision;
  options.pool = pool;
  return options;
}

CacheOptions CacheFor(Precision precision, size_t batch = 1) {
  CacheOptions options;
  options.precision = precision;
  options.batch_size = batch;
  return options;
}

// The logits after prefilling `prompt` and decoding `continuation`, one vector per
// step, through a fresh cache and session with `engine`.
std::vector<std::vector<double>> SessionLogits(const DecoderModel& model, const std::vector<uint32_t>& prompt,
                                               const std::vector<uint32_t>& continuation, const EngineOptions& engine) {
  return testing::SessionLogits(model, prompt, continuation, engine, CacheFor(engine.precision));
}

class FastEngineGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FastEngineGoldenTest, StaysWithinItsToleranceOfTheReference) {
  const Json golden = testing::LoadJson(GetParam());
  const DecoderModel model = GoldenModel(golden);
  threading::ThreadPool pool(2);
  for (const Json& prompt : golden.at("prompts")) {
    const std::vector<uint32_t> ids = Ids(prompt.at("prompt"));
    const std::vector<uint32_t> continuation = Ids(prompt.at("continuation"));
    for (const auto& [precision, tolerance] : {std::pair{Precision::kF64, 1e-12}, {Precision::kF32, 1e-4}}) {
      const std::vector<std::vector<double>> fast = SessionLogits(model, ids, continuation, Fast(precision, &pool));
      ASSERT_EQ(fast.size(), prompt.at("full_forward").size());
      for (size_t k = 0; k < fast.size(); ++k) {
        const std::vector<double> reference = F64Vector(prompt.at("full_forward")[k].at("logits"));
        EXPECT_LE(MaxAbsDiff(fast[k], reference), tolerance)
            << GetParam() << " " << PrecisionName(precision) << " step " << k;
      }
    }
  }
}

TEST_P(FastEngineGoldenTest, ResultsAreBitIdenticalForOneToFourThreads) {
  const Json golden = testing::LoadJson(GetParam());
  const DecoderModel model = GoldenModel(golden);
  const Json& prompt = golden.at("prompts")[0];
  for (Precision precision : {Precision::kF32, Precision::kF64}) {
    const std::vector<std::vector<double>> serial =
        SessionLogits(model, Ids(prompt.at("prompt")), Ids(prompt.at("continuation")), Fast(precision));
    for (size_t threads : {1, 2, 3, 4}) {
      threading::ThreadPool pool(threads);
      EXPECT_EQ(SessionLogits(model, Ids(prompt.at("prompt")), Ids(prompt.at("continuation")),
                              Fast(precision, &pool)),
                serial)
          << threads << " threads, " << PrecisionName(precision);
    }
  }
}

std::string CaseName(const ::testing::TestParamInfo<std::string>& case_info) {
  return std::filesystem::path(case_info.param).stem().string();
}

INSTANTIATE_TEST_SUITE_P(PublicGoldenCases, FastEngineGoldenTest, ::testing::ValuesIn(testing::GoldenCasePaths()),
                         CaseName);

DecoderModel WideModel() {
  // Wide enough for several panels and task tiles: D 96 (3 heads of 32, GQA-free),
  // F 160, V 300, 2 layers, context 80.
  SplitMix64 rng(2024);
  return *DecoderModel::FromSeed(ModelConfig::Create(300, 96, 3, 160, 2, 80, 10000.0, 1e-5), rng);
}

// Tokens of the 300-word vocabulary above.
std::vector<uint32_t> Tokens(size_t n, uint32_t seed) { return testing::SeededTokens(n, seed, 300); }

TEST(FastEngineTest, TheCh38FixtureIsWithinTheChapterTolerance) {
  SplitMix64 rng(38);
  const DecoderModel model = *DecoderModel::FromSeed(ModelConfig::Create(5, 4, 2, 4, 2, 4, 1e4, 1e-6), rng);
  const std::vector<std::vector<double>> fast = SessionLogits(model, {0, 1}, {2}, Fast(Precision::kF64));
  EXPECT_LE(MaxAbsDiff(fast[0], *LastLogitsCompletePrefix(model, std::vector<uint32_t>{0, 1})), 1e-12);
  EXPECT_LE(MaxAbsDiff(fast[1], *LastLogitsCompletePrefix(model, std::vector<uint32_t>{0, 1, 2})), 1e-12);
}

TEST(FastEngineTest, BatchedPrefillEqualsRowByRowPrefill) {
  const DecoderModel model = WideModel();
  const std::vector<uint32_t> prompt = Tokens(70, 1);
  threading::ThreadPool pool(2);
  for (const auto& [precision, tolerance] : {std::pair{Precision::kF64, 1e-12}, {Precision::kF32, 1e-4}}) {
    const std::vector<double> batched = SessionLogits(model, prompt, {}, Fast(precision, &pool)).back();
    // Row by row: one prompt token, then every other token as a decode.
    const std::vector<uint32_t> first(prompt.begin(), prompt.begin() + 1);
    const std::vector<uint32_t> rest(prompt.begin() + 1, prompt.end());
    const std::vector<double> serial = SessionLogits(model, first, rest, Fast(precision, &pool)).back();
    EXPECT_LE(MaxAbsDiff(batched, serial), tolerance) << PrecisionName(precision);
    const std::vector<double> reference = *LastLogitsCompletePrefix(model, prompt);
    EXPECT_LE(MaxAbsDiff(batched, reference), tolerance) << PrecisionName(precision);
  }
}

TEST(FastEngineTest, ABatchOfSequencesEqualsEachSequenceAlone) {
  const DecoderModel model = WideModel();
  threading::ThreadPool pool(2);
  const size_t batch = 3, length = 20;
  std::vector<uint32_t> prompts;
  std::vector<std::vector<uint32_t>> alone;
  for (size_t b = 0; b < batch; ++b) {
    alone.push_back(Tokens(length, static_cast<uint32_t>(10 + b)));
    prompts.insert(prompts.end(), alone.back().begin(), alone.back().end());
  }
  const std::vector<uint32_t> next = {7, 11, 299};
  for (Precision precision : {Precision::kF64, Precision::kF32}) {
    DecoderKvCache cache = *DecoderKvCache::Create(model, CacheFor(precision, batch));
    DecoderKvSession session = *Bind(cache, model, Fast(precision, &pool));
    Result<StepOutput> prefill = session.PrefillBatch(prompts);
    ASSERT_TRUE(prefill) << prefill.error().message();
    const std::vector<double> prefill_logits(prefill->logits.begin(), prefill->logits.end());
    Result<StepOutput> decode = session.DecodeBatch(next);
    ASSERT_TRUE(decode) << decode.error().message();
    EXPECT_EQ(session.cache().len(), length + 1);
    EXPECT_EQ(session.cache().work().prefill_tokens, batch * length);
    EXPECT_EQ(session.cache().work().decode_tokens, batch);
    const size_t v = model.config().vocabulary_size;
    for (size_t b = 0; b < batch; ++b) {
      const std::vector<std::vector<double>> single =
          SessionLogits(model, alone[b], {next[b]}, Fast(precision, &pool));
      EXPECT_EQ(std::vector<double>(prefill_logits.begin() + b * v, prefill_logits.begin() + (b + 1) * v), single[0])
          << "sequence " << b;
      EXPECT_EQ(std::vector<double>(decode->logits.begin() + b * v, decode->logits.begin() + (b + 1) * v), single[1])
          << "sequence " << b;
    }
  }
}

TEST(FastEngineTest, CountersMatchTheReferenceEngine) {
  const DecoderModel model = WideModel();
  const std::vector<uint32_t> prompt = Tokens(30, 3);
  KvWork expected;
  for (const EngineOptions& engine : {ReferenceEngine(), Fast(Precision::kF32)}) {
    DecoderKvCache cache = *DecoderKvCache::Create(model, CacheFor(engine.precision));
    DecoderKvSession session = *Bind(cache, model, engine);
    Result<StepOutput> prefill = session.Prefill(prompt);
    ASSERT_TRUE(prefill);
    EXPECT_EQ(prefill->attention_score_values, 2u * 3u * 30u);
    ASSERT_TRUE(session.Decode(5));
    if (engine.backend == Backend::kReference) {
      expected = session.cache().work();
    } else {
      EXPECT_EQ(session.cache().work(), expected);
    }
  }
}

// A model whose block-0 query and key weights are `huge` along a feature that token
// 0 lacks: every other token overflows its own attention score.
DecoderModel OverflowingModel(double huge) {
  DecoderModel model = WideModel();
  std::vector<ParameterUpdate> updates;
  std::vector<double> embedding(model.embedding().values().begin(), model.embedding().values().end());
  embedding[0] = 0.0;
  updates.push_back({0, embedding});
  for (BlockSlot slot : {BlockSlot::kQuery, BlockSlot::kKey}) {
    const size_t index = BlockParameterIndex(0, slot);
    std::vector<double> weights(model.parameter(index).values().begin(), model.parameter(index).values().end());
    for (size_t out = 0; out < 96; ++out) weights[out] = huge;
    updates.push_back({index, weights});
  }
  EXPECT_TRUE(model.UpdateParameters(updates));
  return model;
}

TEST(FastEngineTest, AFailedStepCommitsNothing) {
  // 1e30 overflows an f32 score (~1e61), 1e200 an f64 one, and both stay finite
  // as weights of their precision.
  for (const auto& [precision, huge] : {std::pair{Precision::kF32, 1e30}, {Precision::kF64, 1e200}}) {
    const DecoderModel model = OverflowingModel(huge);
    DecoderKvCache cache = *DecoderKvCache::Create(model, CacheFor(precision));
    DecoderKvSession session = *Bind(cache, model, Fast(precision));
    ASSERT_TRUE(session.Prefill(std::vector<uint32_t>{0, 0}));
    const DecoderKvCache before = *session.cache().Clone();
    ASSERT_FALSE(session.Decode(5)) << PrecisionName(precision);
    EXPECT_TRUE(session.cache() == before) << PrecisionName(precision);
    ASSERT_TRUE(session.Decode(0));  // the session goes on
    session.Reset();
    ASSERT_FALSE(session.Prefill(std::vector<uint32_t>{0, 5, 0}));
    EXPECT_EQ(session.cache().len(), 0u);
    EXPECT_EQ(session.cache().work(), KvWork{});
    EXPECT_FALSE(session.cache().prefill_complete());
  }
}

// A model whose block-0 key element j is huge (1e38, finite in f32) along input
// feature j for j = 2 and 9, with those two features zero in every token but two:
// token 1 (feature 9 large) makes key element 9 infinite, token 2 key element 2.
// RoPE turns pair (8, 9) infinite in both elements, and pair (2, 3).
DecoderModel InfiniteKeyModel() {
  DecoderModel model = WideModel();
  const size_t d = model.config().model_width;
  std::vector<double> embedding(model.embedding().values().begin(), model.embedding().values().end());
  for (size_t token = 0; token < model.config().vocabulary_size; ++token) {
    embedding[token * d + 2] = embedding[token * d + 9] = 0.0;
  }
  embedding[1 * d + 9] = 1000.0;
  embedding[2 * d + 2] = 1000.0;
  const size_t key = BlockParameterIndex(0, BlockSlot::kKey);
  std::vector<double> weights(model.parameter(key).values().begin(), model.parameter(key).values().end());
  for (const size_t j : {2, 9}) weights[j * d + j] = 1e38;  // [input][output], no GQA
  const std::vector<ParameterUpdate> updates = {{0, embedding}, {key, weights}};
  EXPECT_TRUE(model.UpdateParameters(updates));
  return model;
}

TEST(FastEngineTest, APrefillNamesItsFirstNonFiniteKeyForAnyThreadCount) {
  // 72 rows: three row tiles of the parallel check. Row 40 (token 1) is the first
  // bad one, row 66 (token 2, in another tile) a later one: the error must name
  // key element 8 of row 40, whichever tile a thread checks first.
  const DecoderModel model = InfiniteKeyModel();
  std::vector<uint32_t> prompt(72, 0);
  prompt[40] = 1;
  prompt[66] = 2;
  threading::ThreadPool two(2);
  for (threading::ThreadPool* pool : {static_cast<threading::ThreadPool*>(nullptr), &two}) {
    DecoderKvCache cache = *DecoderKvCache::Create(model, CacheFor(Precision::kF32));
    DecoderKvSession session = *Bind(cache, model, Fast(Precision::kF32, pool));
    const Result<StepOutput> failed = session.Prefill(prompt);
    ASSERT_FALSE(failed);
    EXPECT_TRUE(failed.error().Has(ErrorCode::kNonFiniteKey)) << failed.error().Debug();
    EXPECT_NE(failed.error().Debug().find("index: 8,"), std::string::npos) << failed.error().Debug();
    EXPECT_EQ(session.cache().len(), 0u);
    // Without row 40 the first bad row is 66, and the error names its element.
    prompt[40] = 0;
    const Result<StepOutput> later = session.Prefill(prompt);
    prompt[40] = 1;
    ASSERT_FALSE(later);
    EXPECT_NE(later.error().Debug().find("index: 2,"), std::string::npos) << later.error().Debug();
  }
}

TEST(FastEngineTest, DecodeAllocatesNothingAfterBind) {
  const DecoderModel model = WideModel();
  threading::ThreadPool pool(2);
  for (Precision precision : {Precision::kF32, Precision::kF64}) {
    DecoderKvCache cache = *DecoderKvCache::Create(model, CacheFor(precision));
    DecoderKvSession session = *Bind(cache, model, Fast(precision, &pool));
    ASSERT_TRUE(session.Prefill(Tokens(10, 4)));
    ASSERT_TRUE(session.Decode(1));  // warm the pool's workers
    // Every thread counts: the caller and the pool's workers.
    const uint64_t before = testing::HeapAllocationsInProcess();
    for (uint32_t token = 0; token < 50; ++token) ASSERT_TRUE(session.Decode(token));
    EXPECT_EQ(testing::HeapAllocationsInProcess(), before) << PrecisionName(precision);
  }
}

TEST(FastEngineTest, BindRejectsAMismatchedPrecision) {
  const DecoderModel model = WideModel();
  DecoderKvCache cache = *DecoderKvCache::Create(model, CacheFor(Precision::kF64));
  Result<DecoderKvSession> session = Bind(cache, model, Fast(Precision::kF32));
  ASSERT_FALSE(session);
  EXPECT_EQ(session.error().code(), ErrorCode::kUnsupportedBackend);
  EXPECT_FALSE(cache.is_bound());
}

TEST(FastEngineTest, PanelStorageModelsMatchTheirDenseTwin) {
  // A model built straight into f32 panels holds the dense model's draws rounded
  // to f32: the f32 engine sees the same weights either way.
  const ModelConfig config = ModelConfig::Create(300, 96, 3, 160, 2, 80, 10000.0, 1e-5);
  SplitMix64 dense_rng(2024), panel_rng(2024);
  const DecoderModel dense = *DecoderModel::FromSeed(config, dense_rng);
  const DecoderModel panels = *DecoderModel::FromSeed(config, panel_rng, ModelStorage::kPanelsF32);
  EXPECT_EQ(dense_rng.state(), panel_rng.state());
  EXPECT_FALSE(panels.embedding().is_dense());
  const std::vector<uint32_t> prompt = Tokens(12, 5);
  EXPECT_EQ(SessionLogits(panels, prompt, {3, 4}, Fast(Precision::kF32)),
            SessionLogits(dense, prompt, {3, 4}, Fast(Precision::kF32)));
  // The reference path reads panel models through f64 copies of the f32 values.
  EXPECT_LE(MaxAbsDiff(*LastLogitsCompletePrefix(panels, prompt), *LastLogitsCompletePrefix(dense, prompt)), 1e-4);
}

}  // namespace
}  // namespace kvrt

namespace kvrt {
namespace {

// The allocation tests above can only fail if the counter sees allocations.
TEST(AllocationCounterTest, SeesNewMallocAndOtherThreads) {
  const uint64_t before = testing::HeapAllocationsInProcess();
  auto* vector = new std::vector<int>(100);
  delete vector;
  void* raw = std::malloc(64);
  std::free(raw);
  std::thread([] { std::make_unique<int>(1).reset(); }).join();
  EXPECT_GE(testing::HeapAllocationsInProcess() - before, 3u);
}

}  // namespace
}  // namespace kvrt

namespace kvrt {
namespace {

// Grouped-query attention (kv_heads < heads) and multi-query attention
// (kv_heads = 1), with an untied output head: reference cached vs complete
// prefix bit for bit, and the fast engine within its tolerances.
TEST(GroupedQueryAttentionTest, ReferenceAndEngineAgreeForEveryGrouping) {
  for (size_t kv_heads : {4, 2, 1}) {
    ModelConfig config = ModelConfig::Create(97, 64, 4, 96, 2, 40, 10000.0, 1e-5);
    config.kv_heads = kv_heads;
    config.tied_output = kv_heads != 4;
    SplitMix64 rng(kv_heads);
    Result<DecoderModel> model = DecoderModel::FromSeed(config, rng);
    ASSERT_TRUE(model) << model.error().message();
    EXPECT_EQ(model->block(0, BlockSlot::kKey).shape(), (std::vector<size_t>{64, 16 * kv_heads}));
    const std::vector<uint32_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6}, next = {5, 3, 5};
    std::vector<uint32_t> full = prompt;
    full.insert(full.end(), next.begin(), next.end());
    const std::vector<std::vector<double>> reference = SessionLogits(*model, prompt, next, ReferenceEngine());
    for (size_t k = 0; k <= next.size(); ++k) {
      const std::vector<uint32_t> prefix(full.begin(), full.begin() + prompt.size() + k);
      EXPECT_EQ(reference[k], *LastLogitsCompletePrefix(*model, prefix)) << kv_heads << " kv heads, step " << k;
    }
    threading::ThreadPool pool(2);
    for (const auto& [precision, tolerance] : {std::pair{Precision::kF64, 1e-12}, {Precision::kF32, 1e-4}}) {
      const std::vector<std::vector<double>> fast = SessionLogits(*model, prompt, next, Fast(precision, &pool));
      for (size_t k = 0; k < fast.size(); ++k) {
        EXPECT_LE(MaxAbsDiff(fast[k], reference[k]), tolerance) << kv_heads << " kv heads, step " << k;
      }
    }
    // The cache holds kv_heads lanes per sequence; scores count query heads.
    DecoderKvCache cache = *DecoderKvCache::Create(*model, CacheOptions{.precision = Precision::kF64});
    DecoderKvSession session = *Bind(cache, *model, ReferenceEngine());
    ASSERT_TRUE(session.Prefill(prompt));
    EXPECT_EQ(cache.layer(0)->heads(), kv_heads);
    EXPECT_EQ(cache.work().attention_score_values, 2u * 4u * (8u * 9u / 2u));
  }
}

}  // namespace
}  // namespace kvrt
