// The opt-in bf16 activations (EngineOptions::bf16_activations) in the engine: they
// reach the bf16 matrices (the logits move off the f32-activation ones, and stay near
// the oracle: each product errs by at most 2^-9 of Σ|x·w| beyond f32's rounding,
// simd/bf16_activations.h, which the kernel tests hold), they keep every determinism
// promise — the same bits for 1–3 threads, for a prompt prefilled at once, in chunks
// or token by token, and for a sequence alone or beside another slot — they combine
// with int8 activations, and they allocate nothing per decode step. Asking for them
// outside the fast f32 engine is UnsupportedBackend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "allocation_counter.h"
#include "engine_test_support.h"
#include "kv/decoder_kv_cache.h"
#include "model/decoder_model.h"
#include "session/decoder_kv_session.h"
#include "kvrt/threading/thread_pool.h"

namespace kvrt {
namespace {

using Logits = std::vector<double>;
using testing::MaxAbsDiff;
using testing::SeededTokens;

EngineOptions Bf16(WeightFormat format = WeightFormat::kBf16, threading::ThreadPool* pool = nullptr) {
  EngineOptions options = testing::FastF32Engine(format, pool);
  options.bf16_activations = true;
  return options;
}

// D 96, F 160, V 300, untied head: several panels and task tiles per matrix.
DecoderModel Model() {
  SplitMix64 rng(77);
  ModelConfig config = ModelConfig::Create(300, 96, 3, 160, 2, 80, 10000.0, 1e-5);
  config.tied_output = false;
  return *DecoderModel::FromSeed(config, rng);
}

const DecoderModel& SharedModel() {
  static const DecoderModel model = Model();
  return model;
}

TEST(Bf16ActivationsTest, OffByDefault) {
  EXPECT_FALSE(EngineOptions{}.bf16_activations);
  EXPECT_FALSE(ReferenceEngine().bf16_activations);
}

TEST(Bf16ActivationsTest, OutsideTheFastF32EngineIsUnsupportedBackend) {
  const DecoderModel& model = SharedModel();
  EngineOptions reference = ReferenceEngine();
  reference.bf16_activations = true;
  EngineOptions f64 = Bf16();
  f64.precision = Precision::kF64;
  testing::ExpectUnsupportedBackend(model, {reference, f64});
}

TEST(Bf16ActivationsTest, MoveTheLogitsButStayNearTheOracle) {
  const std::vector<uint32_t> prompt = SeededTokens(21, 3, 300), continuation = SeededTokens(5, 4, 300);
  const DecoderModel& model = SharedModel();
  EngineOptions f32 = Bf16();
  f32.bf16_activations = false;
  const testing::OracleDistances distance = testing::DistancesFromTheOracle(model, prompt, continuation, Bf16(), f32);
  const double bf16_error = distance.opt_in, f32_error = distance.exact, spread = distance.spread;
  std::printf("[ bf16 ] |bf16 activations - oracle| %.3g, |f32 activations - oracle| %.3g, logit spread %.3g\n",
              bf16_error, f32_error, spread);
  EXPECT_GT(bf16_error, 10 * f32_error) << "the bf16 activations did not reach the kernels";
  // Each activation errs by ≤ 2^-9 (0.2 %) in every product; through 2 blocks and the
  // head that stays about a per cent of the logits' own spread.
  EXPECT_LT(bf16_error, 0.02 * spread);
}

TEST(Bf16ActivationsTest, BitIdenticalForThreadsChunksAndTokenByToken) {
  const std::vector<uint32_t> prompt = SeededTokens(37, 7, 300), continuation = SeededTokens(4, 8, 300);
  const DecoderModel& model = SharedModel();
  const auto serial = testing::ChunkedSessionLogits(model, prompt, continuation, Bf16());
  for (size_t threads : {1, 2, 3}) {
    threading::ThreadPool pool(threads);
    EXPECT_EQ(testing::ChunkedSessionLogits(model, prompt, continuation, Bf16(WeightFormat::kBf16, &pool)), serial)
        << threads << " threads";
    for (size_t chunk : {1, 5, 16}) {
      EXPECT_EQ(testing::ChunkedSessionLogits(model, prompt, continuation, Bf16(WeightFormat::kBf16, &pool), chunk), serial)
          << threads << " threads, chunks of " << chunk;
    }
  }
}

TEST(Bf16ActivationsTest, ASequenceGetsTheSameBitsBesideAnother) {
  const std::vector<uint32_t> prompt = SeededTokens(19, 9, 300), other = SeededTokens(30, 10, 300);
  const DecoderModel& model = SharedModel();
  const Logits alone = testing::ChunkedSessionLogits(model, prompt, {}, Bf16()).front();
  CacheOptions cache_options;
  cache_options.precision = Precision::kF32;
  cache_options.batch_size = 2;
  DecoderKvCache cache = *DecoderKvCache::Create(model, cache_options);
  Result<DecoderKvSession> session = Bind(cache, model, Bf16());
  ASSERT_TRUE(session) << session.error().message();
  const SlotRun runs[] = {{1, other, RunPhase::kPrefill, true}, {0, prompt, RunPhase::kPrefill, true}};
  Result<SlotStepOutput> step = session->Step(runs);
  ASSERT_TRUE(step) << step.error().message();
  EXPECT_EQ(Logits(step->logits.begin() + 300, step->logits.begin() + 600), alone);
}

// A q4_k_m-like mix has no bf16 matrix; as-stored bf16 weights with both roundings
// asked: the bf16 matrices take bf16 activations, and the int8 option leaves them be.
TEST(Bf16ActivationsTest, OnlyBf16MatricesTakeThemAndInt8CombinesWithThem) {
  const std::vector<uint32_t> prompt = SeededTokens(17, 11, 300), continuation = SeededTokens(3, 12, 300);
  const DecoderModel& model = SharedModel();
  EngineOptions q8 = Bf16(WeightFormat::kQ8_0), q8_exact = Bf16(WeightFormat::kQ8_0);
  q8_exact.bf16_activations = false;
  EXPECT_EQ(testing::ChunkedSessionLogits(model, prompt, continuation, q8), testing::ChunkedSessionLogits(model, prompt, continuation, q8_exact));
  EngineOptions both = Bf16();
  both.int8_activations = true;
  EXPECT_EQ(testing::ChunkedSessionLogits(model, prompt, continuation, both), testing::ChunkedSessionLogits(model, prompt, continuation, Bf16()));
}

TEST(Bf16ActivationsTest, DecodingAllocatesNothing) {
  threading::ThreadPool pool(2);
  const DecoderModel& model = SharedModel();
  CacheOptions cache_options;
  cache_options.precision = Precision::kF32;
  DecoderKvCache cache = *DecoderKvCache::Create(model, cache_options);
  Result<DecoderKvSession> session = Bind(cache, model, Bf16(WeightFormat::kBf16, &pool));
  ASSERT_TRUE(session) << session.error().message();
  ASSERT_TRUE(session->Prefill(SeededTokens(10, 4, 300)));
  ASSERT_TRUE(session->Decode(1));  // warm the pool's workers
  const uint64_t before = testing::HeapAllocationsInProcess();
  for (uint32_t token = 0; token < 40; ++token) ASSERT_TRUE(session->Decode(token));
  EXPECT_EQ(testing::HeapAllocationsInProcess(), before);
}

}  // namespace
}  // namespace kvrt
