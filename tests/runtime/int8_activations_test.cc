// The opt-in int8 activations (EngineOptions::int8_activations) in the engine: they
// reach the q8_0, q4_0, q5_0, q4_1, q5_1, iq4_nl, iq4_xs and K-quant matrices (q2_k, q3_k, q4_k,
// q5_k, q6_k, and llama-quantize's Q4_K_M and Q3_K_M mixes of them) (the logits move off the f32-activation ones, and stay
// near the oracle), they keep every determinism promise — the same bits for 1–3
// threads, for a prompt prefilled at once, in chunks or token by token, and for a
// sequence alone or beside another slot — and they allocate nothing per decode step.
// Asking for them outside the fast f32 engine is UnsupportedBackend.
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

EngineOptions Int8(WeightFormat format, threading::ThreadPool* pool = nullptr) {
  EngineOptions options = testing::FastF32Engine(format, pool);
  options.int8_activations = true;
  return options;
}

// D 96, F 160 (q8_0/q4_0 everywhere: both multiples of 32), V 300, untied head:
// several panels and task tiles per matrix. The K-quants and iq4_xs need K a multiple
// of 256: D 256, F 512.
DecoderModel Model(bool k_quant = false) {
  SplitMix64 rng(77);
  ModelConfig config = k_quant ? ModelConfig::Create(300, 256, 4, 512, 2, 80, 10000.0, 1e-5)
                               : ModelConfig::Create(300, 96, 3, 160, 2, 80, 10000.0, 1e-5);
  config.tied_output = false;
  return *DecoderModel::FromSeed(config, rng);
}

constexpr WeightFormat kFormats[] = {WeightFormat::kQ8_0, WeightFormat::kQ4_0, WeightFormat::kQ5_0,
                                     WeightFormat::kQ4_1, WeightFormat::kQ5_1,
                                     WeightFormat::kQ3_K, WeightFormat::kQ4_K, WeightFormat::kQ5_K,
                                     WeightFormat::kQ6_K, WeightFormat::kQ4_K_M, WeightFormat::kQ3_K_M,
                                     WeightFormat::kIQ4_NL, WeightFormat::kIQ4_XS, WeightFormat::kQ2_K};

// Formats whose blocks are super-blocks of 256 rows.
bool NeedsSuperBlocks(WeightFormat format) {
  return format != WeightFormat::kQ8_0 && format != WeightFormat::kQ4_0 &&
         format != WeightFormat::kQ5_0 && format != WeightFormat::kQ4_1 &&
         format != WeightFormat::kQ5_1 && format != WeightFormat::kIQ4_NL;
}

// The model each format is tested on (built once).
const DecoderModel& ModelFor(WeightFormat format) {
  static const DecoderModel small = Model(), k_quant = Model(true);
  return NeedsSuperBlocks(format) ? k_quant : small;
}

TEST(Int8ActivationsTest, OffByDefault) {
  EXPECT_FALSE(EngineOptions{}.int8_activations);
  EXPECT_FALSE(ReferenceEngine().int8_activations);
}

TEST(Int8ActivationsTest, OutsideTheFastF32EngineIsUnsupportedBackend) {
  const DecoderModel model = Model();
  EngineOptions reference = ReferenceEngine();
  reference.int8_activations = true;
  EngineOptions f64 = Int8(WeightFormat::kQ8_0);
  f64.precision = Precision::kF64;
  testing::ExpectUnsupportedBackend(model, {reference, f64});
}

TEST(Int8ActivationsTest, MoveTheLogitsButStayNearTheOracle) {
  const std::vector<uint32_t> prompt = SeededTokens(21, 3, 300), continuation = SeededTokens(5, 4, 300);
  for (WeightFormat format : kFormats) {
    // The f64 oracle of every format is slow under a sanitizer, and the int8 kernels'
    // memory use is BitIdenticalForThreadsChunksAndTokenByToken's on every format.
    if (!sanitizer_build::FileRunsInThisBuild(WeightFormatName(format))) continue;
    const DecoderModel& model = ModelFor(format);
    EngineOptions f32 = Int8(format);
    f32.int8_activations = false;
    const testing::OracleDistances distance =
        testing::DistancesFromTheOracle(model, prompt, continuation, Int8(format), f32);
    const double int8_error = distance.opt_in, f32_error = distance.exact, spread = distance.spread;
    std::printf("[ int8 ] %s: |int8 - oracle| %.3g, |f32 activations - oracle| %.3g, logit spread %.3g\n",
                std::string(WeightFormatName(format)).c_str(), int8_error, f32_error, spread);
    EXPECT_GT(int8_error, 10 * f32_error) << "the int8 activations did not reach the kernels";
    // Each activation errs by ≤ 1/254 of its block's largest (0.4 %) in every
    // product; through 2 blocks and the head that stays a few per cent of the
    // logits' own spread.
    EXPECT_LT(int8_error, 0.05 * spread) << WeightFormatName(format);
  }
}

TEST(Int8ActivationsTest, BitIdenticalForThreadsChunksAndTokenByToken) {
  const std::vector<uint32_t> prompt = SeededTokens(37, 7, 300), continuation = SeededTokens(4, 8, 300);
  for (WeightFormat format : kFormats) {
    const DecoderModel& model = ModelFor(format);
    const auto serial = testing::ChunkedSessionLogits(model, prompt, continuation, Int8(format));
    for (size_t threads : {1, 2, 3}) {
      threading::ThreadPool pool(threads);
      EXPECT_EQ(testing::ChunkedSessionLogits(model, prompt, continuation, Int8(format, &pool)), serial)
          << threads << " threads, " << WeightFormatName(format);
      for (size_t chunk : {1, 5, 16}) {
        EXPECT_EQ(testing::ChunkedSessionLogits(model, prompt, continuation, Int8(format, &pool), chunk), serial)
            << threads << " threads, chunks of " << chunk << ", " << WeightFormatName(format);
      }
    }
  }
}

TEST(Int8ActivationsTest, ASequenceGetsTheSameBitsBesideAnother) {
  const std::vector<uint32_t> prompt = SeededTokens(19, 9, 300), other = SeededTokens(30, 10, 300);
  for (WeightFormat format : kFormats) {
    const DecoderModel& model = ModelFor(format);
    const Logits alone = testing::ChunkedSessionLogits(model, prompt, {}, Int8(format)).front();
    CacheOptions cache_options;
    cache_options.precision = Precision::kF32;
    cache_options.batch_size = 2;
    DecoderKvCache cache = *DecoderKvCache::Create(model, cache_options);
    Result<DecoderKvSession> session = Bind(cache, model, Int8(format));
    ASSERT_TRUE(session) << session.error().message();
    const SlotRun runs[] = {{1, other, RunPhase::kPrefill, true}, {0, prompt, RunPhase::kPrefill, true}};
    Result<SlotStepOutput> step = session->Step(runs);
    ASSERT_TRUE(step) << step.error().message();
    const Logits beside(step->logits.begin() + 300, step->logits.begin() + 600);
    EXPECT_EQ(beside, alone) << WeightFormatName(format);
  }
}

TEST(Int8ActivationsTest, DecodingAllocatesNothing) {
  threading::ThreadPool pool(2);
  for (WeightFormat format : kFormats) {
    const DecoderModel& model = ModelFor(format);
    CacheOptions cache_options;
    cache_options.precision = Precision::kF32;
    DecoderKvCache cache = *DecoderKvCache::Create(model, cache_options);
    Result<DecoderKvSession> session = Bind(cache, model, Int8(format, &pool));
    ASSERT_TRUE(session) << session.error().message();
    ASSERT_TRUE(session->Prefill(SeededTokens(10, 4, 300)));
    ASSERT_TRUE(session->Decode(1));  // warm the pool's workers
    const uint64_t before = testing::HeapAllocationsInProcess();
    for (uint32_t token = 0; token < 40; ++token) ASSERT_TRUE(session->Decode(token));
    EXPECT_EQ(testing::HeapAllocationsInProcess(), before) << WeightFormatName(format);
  }
}

}  // namespace
}  // namespace kvrt
