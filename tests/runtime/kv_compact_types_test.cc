// The compact KV caches (KvType::kF16, kBf16, kQ8_0): the fast f32 engine against
// its oracle, the reference engine on rows rounded to the type, within a derived
// bound (RoundingBound) on every golden case and on prompts of several attention
// blocks; batch == solo, chunked == whole prefill and 1–4 threads bit for bit; the
// bytes each stores; no allocation on a step beyond the f32 cache's; and the
// option's errors. Every test runs for every type.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "allocation_counter.h"
#include "engine_test_support.h"
#include "golden_case.h"
#include "kv/decoder_kv_cache.h"
#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/threading/thread_pool.h"
#include "model/decoder_model.h"
#include "session/decoder_kv_session.h"

namespace kvrt {
namespace {

using testing::GoldenModel;
using testing::Ids;
using testing::MaxAbsDiff;
using testing::Json;
using testing::SeededTokens;

using Logits = std::vector<double>;

constexpr double kTolerance = 1e-4;  // the fast f32 engine's, against its oracle

constexpr KvType kHalfWidthTypes[] = {KvType::kF16, KvType::kBf16};
constexpr KvType kCompactTypes[] = {KvType::kF16, KvType::kBf16, KvType::kQ8_0};

// The fast 16-bit path against its oracle. Both round their own K/V values to the
// type: the fast path its f32 values, the oracle its f64 ones, and where those
// straddle the midpoint between two neighbours they round one step apart (f16 on
// p04_dh6 shows 4.8e-4 from such a flip). A flipped element moves by at most twice
// the largest rounding error, so the bound is the f32 tolerance plus twice the
// logits' own response to rounding every K/V element (oracle vs exact).
double RoundingBound(std::span<const double> oracle, std::span<const double> exact) {
  double rounding = 0.0;
  for (size_t i = 0; i < oracle.size() && i < exact.size(); ++i) {
    rounding = std::max(rounding, std::fabs(oracle[i] - exact[i]));
  }
  return kTolerance + 2.0 * rounding;
}

EngineOptions Fast(KvType type, threading::ThreadPool* pool = nullptr,
                   size_t max_rows = EngineOptions::kDefaultMaxRowsPerStep) {
  EngineOptions options;
  options.pool = pool;
  options.max_rows_per_step = max_rows;
  options.kv_type = type;
  return options;
}

EngineOptions Reference(KvType type) {
  EngineOptions options = ReferenceEngine();
  options.kv_type = type;
  return options;
}

std::string Name(KvType type) { return std::string(KvTypeName(type)); }

CacheOptions CacheFor(const EngineOptions& engine, size_t slots = 1) {
  CacheOptions options;
  options.batch_size = slots;
  options.precision = engine.precision;
  options.kv_type = engine.kv_type;
  return options;
}

std::vector<Logits> SessionLogits(const DecoderModel& model, const std::vector<uint32_t>& prompt,
                                  const std::vector<uint32_t>& continuation, const EngineOptions& engine) {
  return testing::SessionLogits(model, prompt, continuation, engine, CacheFor(engine));
}

class KvCompactTypeGoldenTest : public ::testing::TestWithParam<std::tuple<std::string, KvType>> {};

TEST_P(KvCompactTypeGoldenTest, FastStaysWithinTheToleranceOfItsOracle) {
  const auto& [path, type] = GetParam();
  const Json golden = testing::LoadJson(path);
  const DecoderModel model = GoldenModel(golden);
  threading::ThreadPool pool(2);
  bool rounding_showed = false;
  for (const Json& prompt : golden.at("prompts")) {
    const std::vector<uint32_t> ids = Ids(prompt.at("prompt"));
    const std::vector<uint32_t> continuation = Ids(prompt.at("continuation"));
    const std::vector<Logits> oracle = SessionLogits(model, ids, continuation, Reference(type));
    const std::vector<Logits> fast = SessionLogits(model, ids, continuation, Fast(type, &pool));
    const std::vector<Logits> exact = SessionLogits(model, ids, continuation, ReferenceEngine());
    ASSERT_EQ(fast.size(), oracle.size());
    for (size_t k = 0; k < fast.size(); ++k) {
      EXPECT_LE(MaxAbsDiff(fast[k], oracle[k]), RoundingBound(oracle[k], exact[k]))
          << path << " " << Name(type) << " step " << k;
      std::printf("[ kv %s ] %s step %zu: fast - oracle %.3g, oracle - exact %.3g\n",
                  Name(type).c_str(), std::filesystem::path(path).stem().c_str(), k,
                  MaxAbsDiff(fast[k], oracle[k]), MaxAbsDiff(oracle[k], exact[k]));
      rounding_showed = rounding_showed || oracle[k] != exact[k];
    }
  }
  // The oracle does round: its logits are not the exact cache's.
  EXPECT_TRUE(rounding_showed) << path << " " << Name(type);
}

std::string CaseName(const ::testing::TestParamInfo<std::tuple<std::string, KvType>>& case_info) {
  return std::filesystem::path(std::get<0>(case_info.param)).stem().string() + "_" +
         Name(std::get<1>(case_info.param));
}

INSTANTIATE_TEST_SUITE_P(PublicGoldenCases, KvCompactTypeGoldenTest,
                         ::testing::Combine(::testing::ValuesIn(testing::GoldenCasePaths()),
                                            ::testing::ValuesIn(kCompactTypes)),
                         CaseName);

constexpr uint32_t kVocabulary = 211;  // LongModel's

// Two query heads per key/value head, head width 16, a context for prompts of
// many four-row attention blocks.
DecoderModel LongModel() {
  ModelConfig config = ModelConfig::Create(kVocabulary, 64, 4, 96, 2, 300, 10000.0, 1e-5);
  config.kv_heads = 2;
  SplitMix64 rng(1717);
  return *DecoderModel::FromSeed(config, rng);
}

TEST(KvCompactTypeTest, ChunkedEqualsWholeForAnyThreadCountWithinToleranceOfTheOracle) {
  const DecoderModel model = LongModel();
  const std::vector<uint32_t> prompt = SeededTokens(157, 3, kVocabulary);
  const std::vector<uint32_t> continuation = {5, 17, 200, 9};
  const std::vector<Logits> exact = SessionLogits(model, prompt, continuation, ReferenceEngine());
  for (KvType type : kCompactTypes) {
    const std::vector<Logits> oracle = SessionLogits(model, prompt, continuation, Reference(type));
    const std::vector<Logits> whole = SessionLogits(model, prompt, continuation, Fast(type));
    ASSERT_EQ(whole.size(), oracle.size());
    for (size_t k = 0; k < whole.size(); ++k) {
      EXPECT_LE(MaxAbsDiff(whole[k], oracle[k]), RoundingBound(oracle[k], exact[k]))
          << Name(type) << " step " << k;
    }
    for (size_t max_rows : {size_t{70}, size_t{9}, size_t{1}}) {
      EXPECT_EQ(SessionLogits(model, prompt, continuation, Fast(type, nullptr, max_rows)), whole)
          << Name(type) << " " << max_rows << " rows";
    }
    for (size_t threads : {2, 3, 4}) {
      threading::ThreadPool pool(threads);
      EXPECT_EQ(SessionLogits(model, prompt, continuation, Fast(type, &pool, 70)), whole)
          << Name(type) << " " << threads << " threads";
    }
  }
}

// Prefill chunks of two slots beside a third slot's decode, in one step: each
// run's logits are the bits of its sequence alone.
TEST(KvCompactTypeTest, ASequenceHasTheSameBitsAloneOrBesideOthers) {
  const DecoderModel model = LongModel();
  const std::vector<std::vector<uint32_t>> prompts = {
      SeededTokens(90, 7, kVocabulary), SeededTokens(13, 8, kVocabulary), SeededTokens(6, 9, kVocabulary)};
  threading::ThreadPool pool(3);
  for (KvType type : kCompactTypes) {
    const EngineOptions engine = Fast(type, &pool);
    DecoderKvCache cache = *DecoderKvCache::Create(model, CacheFor(engine, 3));
    DecoderKvSession session = *Bind(cache, model, engine);
    ASSERT_TRUE(session.Step(
        std::vector<SlotRun>{{2, std::span(prompts[2]).first(5), RunPhase::kPrefill, true}}));
    Result<SlotStepOutput> out = session.Step(
        std::vector<SlotRun>{{0, prompts[0], RunPhase::kPrefill, true},
                             {2, std::span(prompts[2]).subspan(5, 1), RunPhase::kDecode, true},
                             {1, prompts[1], RunPhase::kPrefill, true}});
    ASSERT_TRUE(out) << out.error().message();
    const size_t v = model.config().vocabulary_size;
    const std::vector<uint32_t> decoded_prefix(prompts[2].begin(), prompts[2].begin() + 5);
    const Logits alone[3] = {
        SessionLogits(model, prompts[0], {}, Fast(type)).back(),
        SessionLogits(model, decoded_prefix, {prompts[2][5]}, Fast(type)).back(),
        SessionLogits(model, prompts[1], {}, Fast(type)).back()};
    for (size_t r = 0; r < 3; ++r) {
      EXPECT_EQ(Logits(out->logits.begin() + r * v, out->logits.begin() + (r + 1) * v), alone[r])
          << Name(type) << " run " << r;
    }
  }
}

TEST(KvCompactTypeTest, SixteenBitTypesStoreHalfTheBytesOfTheF32Cache) {
  const DecoderModel model = LongModel();
  const DecoderKvCache f32 = *DecoderKvCache::Create(model, CacheFor(EngineOptions{}));
  EXPECT_EQ(f32.storage_bytes(),
            2 * 2 * 300 * 32 * sizeof(float));  // K+V, layers, positions, kv width
  for (KvType type : kHalfWidthTypes) {
    const DecoderKvCache half = *DecoderKvCache::Create(model, CacheFor(Fast(type)));
    EXPECT_EQ(half.storage_bytes() * 2, f32.storage_bytes()) << Name(type);
    // The reference's 16-bit cache keeps f64 storage.
    const DecoderKvCache oracle = *DecoderKvCache::Create(model, CacheFor(Reference(type)));
    EXPECT_EQ(oracle.storage_bytes(), 2 * f32.storage_bytes()) << Name(type);
  }
  // q8_0: a row of 16 takes one whole block, 32 quants and an f16 scale.
  const DecoderKvCache q8 = *DecoderKvCache::Create(model, CacheFor(Fast(KvType::kQ8_0)));
  EXPECT_EQ(q8.storage_bytes(), 2 * 2 * 300 * 2 * (32 + 2));  // K+V, layers, positions, kv heads, row
  EXPECT_EQ(DecoderKvCache::Create(model, CacheFor(Reference(KvType::kQ8_0)))->storage_bytes(),
            2 * f32.storage_bytes());
}

// A head of 64 (two whole blocks) stores 0.53 of f16's bytes.
TEST(KvCompactTypeTest, AQ8CacheOfWholeBlocksStoresSeventeenThirtysecondsOfF16) {
  SplitMix64 rng(3);
  const DecoderModel model = *DecoderModel::FromSeed(ModelConfig::Create(50, 128, 2, 96, 2, 64, 10000.0, 1e-5), rng);
  const size_t f16 = DecoderKvCache::Create(model, CacheFor(Fast(KvType::kF16)))->storage_bytes();
  const size_t q8 = DecoderKvCache::Create(model, CacheFor(Fast(KvType::kQ8_0)))->storage_bytes();
  EXPECT_EQ(q8 * 32, f16 * 17);
}

TEST(KvCompactTypeTest, TheCommittedRowsAreTheOraclesRoundedValues) {
  const DecoderModel model = LongModel();
  const std::vector<uint32_t> prompt = SeededTokens(20, 5, kVocabulary);
  for (KvType type : kHalfWidthTypes) {
    DecoderKvCache cache = *DecoderKvCache::Create(model, CacheFor(Reference(type)));
    DecoderKvSession session = *Bind(cache, model, Reference(type));
    ASSERT_TRUE(session.Prefill(prompt));
    const auto round_trip = [&](float x) {
      return type == KvType::kF16 ? simd::F16ToF32(simd::F32ToF16(x))
                                  : simd::Bf16ToF32(simd::F32ToBf16(x));
    };
    for (size_t l = 0; l < cache.layer_count(); ++l) {
      for (const std::vector<double>& rows :
           {cache.layer(l)->KeysSnapshot(), cache.layer(l)->ValuesSnapshot()}) {
        for (double x : rows) {
          const float narrow = static_cast<float>(x);
          ASSERT_EQ(static_cast<double>(narrow), x) << "not an " << Name(type) << " value";
          ASSERT_EQ(round_trip(narrow), narrow) << "not an " << Name(type) << " value: " << x;
        }
      }
    }
  }
}

// The reference's q8_0 rows are whole q8_0 blocks: quantizing a committed row
// again gives the same row (its largest element is 127 steps of an f16 scale).
TEST(KvCompactTypeTest, TheCommittedRowsAreTheOraclesQ8Values) {
  const DecoderModel model = LongModel();
  DecoderKvCache cache = *DecoderKvCache::Create(model, CacheFor(Reference(KvType::kQ8_0)));
  DecoderKvSession session = *Bind(cache, model, Reference(KvType::kQ8_0));
  ASSERT_TRUE(session.Prefill(SeededTokens(20, 5, kVocabulary)));
  const size_t hw = model.config().head_width();
  for (size_t l = 0; l < cache.layer_count(); ++l) {
    for (const std::vector<double>& rows : {cache.layer(l)->KeysSnapshot(), cache.layer(l)->ValuesSnapshot()}) {
      for (size_t begin = 0; begin < rows.size(); begin += hw) {
        std::vector<double> again(hw);
        simd::RoundKvRowToQ8_0(rows.data() + begin, hw, again.data());
        ASSERT_EQ(again, std::vector<double>(rows.begin() + begin, rows.begin() + begin + hw)) << "layer " << l;
      }
    }
  }
}

TEST(KvCompactTypeTest, TheEngineAndTheCacheMustAgree) {
  const DecoderModel model = LongModel();
  for (KvType type : kCompactTypes) {
    SCOPED_TRACE(Name(type));
    DecoderKvCache half = *DecoderKvCache::Create(model, CacheFor(Fast(type)));
    Result<DecoderKvSession> mismatch = Bind(half, model, EngineOptions{});
    ASSERT_FALSE(mismatch);
    EXPECT_EQ(mismatch.error().code(), ErrorCode::kUnsupportedBackend);
    EXPECT_FALSE(half.is_bound());  // a rejected bind changes nothing
    DecoderKvCache f32 = *DecoderKvCache::Create(model, CacheFor(EngineOptions{}));
    mismatch = Bind(f32, model, Fast(type));
    ASSERT_FALSE(mismatch);
    EXPECT_EQ(mismatch.error().code(), ErrorCode::kUnsupportedBackend);

    EngineOptions f64 = Fast(type);
    f64.precision = Precision::kF64;
    EXPECT_EQ(f64.Validate().error().code(), ErrorCode::kUnsupportedBackend);
    EngineOptions variant = Fast(type);
    variant.batch_invariant = false;
    EXPECT_EQ(variant.Validate().error().code(), ErrorCode::kUnsupportedBackend);
    EXPECT_TRUE(Reference(type).Validate());
  }
  // An f16 cache does not bind a bf16 engine, nor the other way round.
  DecoderKvCache f16 = *DecoderKvCache::Create(model, CacheFor(Fast(KvType::kF16)));
  Result<DecoderKvSession> crossed = Bind(f16, model, Fast(KvType::kBf16));
  ASSERT_FALSE(crossed);
  EXPECT_EQ(crossed.error().code(), ErrorCode::kUnsupportedBackend);
  EngineOptions unknown;
  unknown.kv_type = static_cast<KvType>(7);
  EXPECT_EQ(unknown.Validate().error().code(), ErrorCode::kUnsupportedBackend);
}

uint64_t StepAllocations(const DecoderModel& model, const std::vector<uint32_t>& prompt,
                         const EngineOptions& engine) {
  return testing::StepAllocations(model, prompt, engine, CacheFor(engine));
}

TEST(KvCompactTypeTest, AllocatesNoMoreOnAStepThanTheF32Cache) {
  const DecoderModel model = LongModel();
  const std::vector<uint32_t> prompt = SeededTokens(150, 11, kVocabulary);
  threading::ThreadPool pool(2);
  EngineOptions f32;
  f32.pool = &pool;
  const uint64_t f32_allocations = StepAllocations(model, prompt, f32);
  for (KvType type : kCompactTypes) {
    EXPECT_EQ(StepAllocations(model, prompt, Fast(type, &pool)), f32_allocations) << Name(type);
  }
}

}  // namespace
}  // namespace kvrt
