// Compressed weights (kvrt/weight_format.h): the fast f32 engine on bf16, f16,
// q8_0, q4_0, q5_0, iq4_nl, q4_k, q5_k and q6_k matrices against the scalar f64 reference engine
// on the same dequantized weights (the oracle), on the golden cases converted at
// load and on the GGUF fixtures as stored and converted; fallbacks for widths that
// are not a multiple of the format's block; bit-identical results for 1, 2 and 3
// threads and (K-quants) for any prefill chunking; and greedy generation on the
// demo model with q8_0 against f32 weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "allocation_counter.h"
#include "engine_test_support.h"
#include "golden_case.h"
#include "formats/llmcp35/checkpoint.h"
#include "kvrt/generation.h"
#include "kv/decoder_kv_cache.h"
#include "formats/load_model.h"
#include "model/decoder_model.h"
#include "session/decoder_kv_session.h"
#include "kvrt/threading/thread_pool.h"
#include "kvrt/weight_format.h"
#include "weights/prepare_weights.h"
#include "weights/weight_plan.h"
#include "generate/generate.h"

namespace kvrt {
namespace {

using testing::GoldenModel;

using testing::Ids;
using testing::Json;
using testing::MaxAbsDiff;
using testing::SeededTokens;

constexpr WeightFormat kConverted[] = {WeightFormat::kF32,  WeightFormat::kBf16, WeightFormat::kF16,
                                       WeightFormat::kQ8_0, WeightFormat::kQ4_0, WeightFormat::kQ5_0,
                                       WeightFormat::kQ4_1, WeightFormat::kQ5_1, WeightFormat::kIQ4_NL, WeightFormat::kIQ4_XS, WeightFormat::kQ4_K,
                                       WeightFormat::kQ5_K, WeightFormat::kQ6_K, WeightFormat::kQ3_K,
                                       WeightFormat::kQ2_K};
constexpr WeightFormat kAll[] = {WeightFormat::kAsStored, WeightFormat::kF32,  WeightFormat::kBf16,
                                 WeightFormat::kF16,      WeightFormat::kQ8_0, WeightFormat::kQ4_0,
                                 WeightFormat::kQ5_0,     WeightFormat::kIQ4_NL, WeightFormat::kIQ4_XS,
                                 WeightFormat::kQ4_K,     WeightFormat::kQ5_K,   WeightFormat::kQ6_K,
                                 WeightFormat::kQ3_K,     WeightFormat::kQ4_1,   WeightFormat::kQ5_1,
                                 WeightFormat::kQ2_K};
// The formats that compress, every one packed by the fast f32 engine's kernels.
constexpr WeightFormat kCompressed[] = {WeightFormat::kBf16, WeightFormat::kF16,  WeightFormat::kQ8_0,
                                        WeightFormat::kQ4_0, WeightFormat::kQ5_0, WeightFormat::kIQ4_NL,
                                        WeightFormat::kIQ4_XS, WeightFormat::kQ4_K, WeightFormat::kQ5_K,
                                        WeightFormat::kQ6_K, WeightFormat::kQ3_K, WeightFormat::kQ4_1,
                                        WeightFormat::kQ5_1, WeightFormat::kQ2_K};
// The K-quants.
constexpr WeightFormat kKQuants[] = {WeightFormat::kQ4_K, WeightFormat::kQ5_K, WeightFormat::kQ6_K,
                                     WeightFormat::kQ3_K, WeightFormat::kQ2_K};
// llama-quantize's mixes.
constexpr WeightFormat kMixes[] = {WeightFormat::kQ4_K_S, WeightFormat::kQ4_K_M, WeightFormat::kQ5_K_S,
                                   WeightFormat::kQ5_K_M, WeightFormat::kQ3_K_M};

EngineOptions Engine(Backend backend, Precision precision, WeightFormat weights,
                     threading::ThreadPool* pool = nullptr) {
  EngineOptions options;
  options.backend = backend;
  options.precision = precision;
  options.weights = weights;
  options.pool = pool;
  return options;
}

// Prefill of `prompt`, then one decode per `continuation` token: the logits of
// every step.
std::vector<std::vector<double>> SessionLogits(const DecoderModel& model, const std::vector<uint32_t>& prompt,
                                               const std::vector<uint32_t>& continuation,
                                               const EngineOptions& engine) {
  CacheOptions cache_options;
  cache_options.precision = engine.precision;
  Result<DecoderKvCache> cache = DecoderKvCache::Create(model, cache_options);
  EXPECT_TRUE(cache) << cache.error().message();
  Result<DecoderKvSession> session = Bind(*cache, model, engine);
  EXPECT_TRUE(session) << session.error().message();
  if (!session) return {};
  std::vector<std::vector<double>> out;
  Result<StepOutput> step = session->Prefill(prompt);
  EXPECT_TRUE(step) << step.error().message();
  out.emplace_back(step->logits.begin(), step->logits.end());
  for (uint32_t token : continuation) {
    step = session->Decode(token);
    EXPECT_TRUE(step) << step.error().message();
    out.emplace_back(step->logits.begin(), step->logits.end());
  }
  return out;
}

TEST(WeightFormatTest, NamesParseBackAndUnknownValuesAreRefused) {
  for (WeightFormat format : kAll) {
    EXPECT_EQ(ParseWeightFormat(WeightFormatName(format)), format);
    EXPECT_FALSE(IsWeightMix(format));
  }
  for (WeightFormat mix : kMixes) {
    EXPECT_EQ(ParseWeightFormat(WeightFormatName(mix)), mix);
    EXPECT_TRUE(IsWeightMix(mix));
  }
  EXPECT_EQ(ParseWeightFormat("Q8_0"), std::nullopt);
  EXPECT_EQ(ParseWeightFormat("q8"), std::nullopt);
  EXPECT_EQ(ParseWeightFormat(""), std::nullopt);
  EngineOptions options;
  EXPECT_EQ(options.weights, WeightFormat::kAsStored);
  EXPECT_TRUE(options.Validate());
  options.weights = static_cast<WeightFormat>(static_cast<int>(WeightFormat::kQ2_K) + 1);
  EXPECT_FALSE(IsKnownWeightFormat(options.weights));
  EXPECT_EQ(WeightFormatName(options.weights), "unknown");
  Result<void> refused = options.Validate();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), ErrorCode::kUnsupportedBackend);
  EXPECT_EQ(static_cast<int>(WeightFormat::kIQ4_NL), 16);
  EXPECT_EQ(static_cast<int>(WeightFormat::kIQ4_XS), 17);
  EXPECT_EQ(static_cast<int>(WeightFormat::kQ4_1), 18);
  EXPECT_EQ(static_cast<int>(WeightFormat::kQ5_1), 19);
  // q2_k is 20, and 21 is past the enum.
  EXPECT_EQ(static_cast<int>(WeightFormat::kQ2_K), 20);
  EXPECT_FALSE(IsKnownWeightFormat(static_cast<WeightFormat>(static_cast<int>(WeightFormat::kQ2_K) + 1)));
}

class CompressedGoldenTest : public ::testing::TestWithParam<std::string> {};

// Every golden case, each format: fast f32 within 1e-4 and fast f64 within 1e-12
// of the reference engine on the same dequantized weights.
TEST_P(CompressedGoldenTest, FastMatchesTheOracleOnTheSameWeights) {
  const Json golden = testing::LoadJson(GetParam());
  const DecoderModel model = GoldenModel(golden);
  threading::ThreadPool pool(2);
  // A sanitizer build takes a sample of the (prompt, format) pairs (CaseRunsInThisBuild).
  size_t index = 0;
  for (const Json& prompt : golden.at("prompts")) {
    const std::vector<uint32_t> ids = Ids(prompt.at("prompt"));
    const std::vector<uint32_t> continuation = Ids(prompt.at("continuation"));
    for (WeightFormat format : kConverted) {
      if (!testing::CaseRunsInThisBuild(index++)) continue;
      const auto oracle =
          SessionLogits(model, ids, continuation, Engine(Backend::kReference, Precision::kF64, format));
      const auto fast32 =
          SessionLogits(model, ids, continuation, Engine(Backend::kFast, Precision::kF32, format, &pool));
      const auto fast64 =
          SessionLogits(model, ids, continuation, Engine(Backend::kFast, Precision::kF64, format, &pool));
      EXPECT_LE(MaxAbsDiff(fast32, oracle), 1e-4) << GetParam() << " " << WeightFormatName(format);
      EXPECT_LE(MaxAbsDiff(fast64, oracle), 1e-12) << GetParam() << " " << WeightFormatName(format);
    }
  }
}

// The default reference path is untouched: as-stored is the model itself, and
// its logits are the recorded ones bit for bit.
TEST_P(CompressedGoldenTest, AsStoredReferenceIsTheSpecPath) {
  const Json golden = testing::LoadJson(GetParam());
  const DecoderModel model = GoldenModel(golden);
  const Json& prompt = golden.at("prompts")[0];
  const auto as_stored = SessionLogits(model, Ids(prompt.at("prompt")), Ids(prompt.at("continuation")),
                                       Engine(Backend::kReference, Precision::kF64, WeightFormat::kAsStored));
  const auto plain = SessionLogits(model, Ids(prompt.at("prompt")), Ids(prompt.at("continuation")),
                                   ReferenceEngine());
  EXPECT_EQ(as_stored, plain);
  for (size_t k = 0; k < as_stored.size(); ++k) {
    EXPECT_EQ(as_stored[k], testing::F64Vector(prompt.at("full_forward")[k].at("logits"))) << k;
  }
  // Explicit f32 in the fast f32 engine is the f32 path itself.
  const auto fast = SessionLogits(model, Ids(prompt.at("prompt")), Ids(prompt.at("continuation")),
                                  Engine(Backend::kFast, Precision::kF32, WeightFormat::kAsStored));
  const auto fast_f32 = SessionLogits(model, Ids(prompt.at("prompt")), Ids(prompt.at("continuation")),
                                      Engine(Backend::kFast, Precision::kF32, WeightFormat::kF32));
  EXPECT_EQ(fast, fast_f32);
}

std::string CaseName(const ::testing::TestParamInfo<std::string>& case_info) {
  return std::filesystem::path(case_info.param).stem().string();
}

INSTANTIATE_TEST_SUITE_P(PublicGoldenCases, CompressedGoldenTest,
                         ::testing::ValuesIn(testing::GoldenCasePaths()), CaseName);

// Every weight format: the fast f32 engine on two threads within 1e-4 of the f64
// oracle on the same weights.
//
// Each fixture file runs every format, so the product grows with both lists; a sanitizer
// build takes a sample of the formats (testing::CaseRunsInThisBuild), starting at a place
// the label picks, so that the fixtures between them still cover every format.
void ExpectFastWithinTheOracleInEveryFormat(const DecoderModel& model, const std::vector<uint32_t>& prompt,
                                            const std::vector<uint32_t>& continuation, const std::string& label) {
  threading::ThreadPool pool(2);
  size_t index = std::hash<std::string>{}(label);
  for (WeightFormat format : kAll) {
    if (!testing::CaseRunsInThisBuild(index++)) continue;
    const auto oracle =
        SessionLogits(model, prompt, continuation, Engine(Backend::kReference, Precision::kF64, format));
    const auto fast =
        SessionLogits(model, prompt, continuation, Engine(Backend::kFast, Precision::kF32, format, &pool));
    EXPECT_LE(MaxAbsDiff(fast, oracle), 1e-4) << label << " " << WeightFormatName(format);
  }
}

class CompressedGgufTest : public ::testing::TestWithParam<std::string> {};

// The GGUF fixtures, as stored (their bf16/f16/q8_0/q4_0 tensors repacked
// losslessly) and converted to each format.
TEST_P(CompressedGgufTest, FastMatchesTheOracleAsStoredAndConverted) {
  Result<ModelFile> loaded = ReadModelFile(testing::FixturePath("gguf/tiny-" + GetParam() + ".gguf"));
  ASSERT_TRUE(loaded) << loaded.error().message();
  const DecoderModel& model = loaded->model;
  const std::vector<uint32_t> prompt = {1, 450, 4996, 17354, 1701, 432, 17204};
  const std::vector<uint32_t> continuation = {975, 278, 17366};
  ExpectFastWithinTheOracleInEveryFormat(model, prompt, continuation, GetParam());
  // As stored, a compressed file keeps its own type for every matrix.
  const std::vector<MatrixWeightFormat> plan = PlanWeightFormats(model, WeightFormat::kAsStored);
  const std::optional<WeightFormat> stored = ParseWeightFormat(GetParam());
  ASSERT_TRUE(stored);
  size_t kept = 0;
  for (const MatrixWeightFormat& matrix : plan) {
    EXPECT_FALSE(matrix.fallback) << matrix.name;
    if (matrix.effective == *stored) ++kept;
    // A file may keep a few tensors in another type (llama.cpp's q4_0 keeps the
    // head in q8_0): those are as stored too; an f32 tensor never is.
    EXPECT_EQ(matrix.as_stored, matrix.effective != WeightFormat::kF32) << matrix.name;
  }
  EXPECT_GT(kept, 0u);
}

INSTANTIATE_TEST_SUITE_P(GgufFixtures, CompressedGgufTest,
                         ::testing::Values("f32", "f16", "bf16", "q8_0", "q4_0"),
                         [](const ::testing::TestParamInfo<std::string>& type) { return type.param; });

class CompressedKQuantGgufTest : public ::testing::TestWithParam<std::string> {};

// The K-quant fixtures made by llama-quantize (fixtures/gguf/modern): as stored, every
// q4_k, q5_k and q6_k tensor is kept in its own type, and the fast engine stays within
// 1e-4 of the oracle as stored and converted.
TEST_P(CompressedKQuantGgufTest, FastMatchesTheOracleAsStoredAndConverted) {
  Result<ModelFile> loaded = ReadModelFile(testing::FixturePath("gguf/modern/kq-" + GetParam() + ".gguf"));
  ASSERT_TRUE(loaded) << loaded.error().message();
  const DecoderModel& model = loaded->model;
  const std::vector<uint32_t> prompt = SeededTokens(19, 3, 512), continuation = SeededTokens(3, 5, 512);
  ExpectFastWithinTheOracleInEveryFormat(model, prompt, continuation, GetParam());
  size_t k_quant = 0;
  for (const MatrixWeightFormat& matrix : PlanWeightFormats(model, WeightFormat::kAsStored)) {
    EXPECT_FALSE(matrix.fallback) << matrix.name;
    EXPECT_EQ(matrix.as_stored, matrix.effective != WeightFormat::kF32) << matrix.name;
    k_quant += std::find(std::begin(kKQuants), std::end(kKQuants), matrix.effective) != std::end(kKQuants);
  }
  // Every matrix of these files is a K-quant (fixtures/gguf/modern's README lists them).
  EXPECT_EQ(k_quant, PlanWeightFormats(model, WeightFormat::kAsStored).size());
}

INSTANTIATE_TEST_SUITE_P(GgufFixtures, CompressedKQuantGgufTest,
                         ::testing::Values("q2_k", "q3_k_m", "q4_k_m", "q4_k_s", "q5_k_m", "q6_k"),
                         [](const ::testing::TestParamInfo<std::string>& type) { return type.param; });

// kq-q5_0.gguf (llama-quantize Q5_0, fixtures/gguf/modern): as stored, its Q5_0 tensors
// are kept as q5_0 (the rest in their own types), and the fast engine stays within 1e-4
// of the oracle as stored and converted.
TEST(CompressedQ5_0GgufTest, FastMatchesTheOracleAsStoredAndConverted) {
  Result<ModelFile> loaded = ReadModelFile(testing::FixturePath("gguf/modern/kq-q5_0.gguf"));
  ASSERT_TRUE(loaded) << loaded.error().message();
  const DecoderModel& model = loaded->model;
  const std::vector<uint32_t> prompt = SeededTokens(19, 3, 512), continuation = SeededTokens(3, 5, 512);
  ExpectFastWithinTheOracleInEveryFormat(model, prompt, continuation, "q5_0");
  threading::ThreadPool pool(2);
  for (WeightFormat format : {WeightFormat::kAsStored, WeightFormat::kQ5_0}) {
    const double diff =
        MaxAbsDiff(SessionLogits(model, prompt, continuation, Engine(Backend::kFast, Precision::kF32, format, &pool)),
                   SessionLogits(model, prompt, continuation, Engine(Backend::kReference, Precision::kF64, format)));
    std::cout << "[ q5_0    ] kq-q5_0 " << WeightFormatName(format) << ": |fast f32 - oracle| " << diff << "\n";
  }
  size_t q5_0 = 0;
  for (const MatrixWeightFormat& matrix : PlanWeightFormats(model, WeightFormat::kAsStored)) {
    EXPECT_FALSE(matrix.fallback) << matrix.name;
    EXPECT_TRUE(matrix.as_stored) << matrix.name;
    q5_0 += matrix.effective == WeightFormat::kQ5_0;
  }
  EXPECT_EQ(q5_0, 15u);  // all but the head, which llama-quantize keeps in Q6_K
}

// kq-iq4_nl.gguf and kq-iq4_xs.gguf (llama-quantize IQ4_NL and IQ4_XS,
// fixtures/gguf/modern; q4_1 and q5_1 below): as stored, their IQ4 tensors are kept in
// their own format (the rest in their own types), and the fast engine stays within 1e-4
// of the oracle as stored and converted.
void ExpectFileKeptAsStoredAndConverted(const std::string& type, WeightFormat format) {
  Result<ModelFile> loaded = ReadModelFile(testing::FixturePath("gguf/modern/kq-" + type + ".gguf"));
  ASSERT_TRUE(loaded) << loaded.error().message();
  const DecoderModel& model = loaded->model;
  const std::vector<uint32_t> prompt = SeededTokens(19, 3, 512), continuation = SeededTokens(3, 5, 512);
  ExpectFastWithinTheOracleInEveryFormat(model, prompt, continuation, type);
  threading::ThreadPool pool(2);
  for (WeightFormat requested : {WeightFormat::kAsStored, format}) {
    const double diff = MaxAbsDiff(
        SessionLogits(model, prompt, continuation, Engine(Backend::kFast, Precision::kF32, requested, &pool)),
        SessionLogits(model, prompt, continuation, Engine(Backend::kReference, Precision::kF64, requested)));
    std::cout << "[ " << type << "  ] kq-" << type << " " << WeightFormatName(requested)
              << ": |fast f32 - oracle| " << diff << "\n";
    EXPECT_LE(diff, 1e-4) << WeightFormatName(requested);
  }
  size_t kept = 0;
  for (const MatrixWeightFormat& matrix : PlanWeightFormats(model, WeightFormat::kAsStored)) {
    EXPECT_FALSE(matrix.fallback) << matrix.name;
    EXPECT_TRUE(matrix.as_stored) << matrix.name;
    kept += matrix.effective == format;
  }
  EXPECT_EQ(kept, 15u);  // all but the head, which llama-quantize keeps in Q6_K
}

TEST(CompressedIQ4GgufTest, IQ4_NLFastMatchesTheOracleAsStoredAndConverted) {
  ExpectFileKeptAsStoredAndConverted("iq4_nl", WeightFormat::kIQ4_NL);
}

TEST(CompressedIQ4GgufTest, IQ4_XSFastMatchesTheOracleAsStoredAndConverted) {
  ExpectFileKeptAsStoredAndConverted("iq4_xs", WeightFormat::kIQ4_XS);
}

// kq-q4_1.gguf and kq-q5_1.gguf (llama-quantize Q4_1 and Q5_1): the same, their 15
// Q4_1/Q5_1 tensors kept as stored in their own format.
TEST(CompressedQ4_1GgufTest, Q4_1FastMatchesTheOracleAsStoredAndConverted) {
  ExpectFileKeptAsStoredAndConverted("q4_1", WeightFormat::kQ4_1);
}

TEST(CompressedQ4_1GgufTest, Q5_1FastMatchesTheOracleAsStoredAndConverted) {
  ExpectFileKeptAsStoredAndConverted("q5_1", WeightFormat::kQ5_1);
}

// kq-q2_k.gguf (llama-quantize's Q2_K mix, fixtures/gguf/modern): as stored, its Q2_K
// tensors are kept as q2_k (its Q3_K, Q4_K and Q6_K ones in their own types), and the
// fast engine stays within 1e-4 of the oracle as stored and converted with q2_k.
TEST(CompressedQ2_KGgufTest, FastMatchesTheOracleAsStoredAndConverted) {
  Result<ModelFile> loaded = ReadModelFile(testing::FixturePath("gguf/modern/kq-q2_k.gguf"));
  ASSERT_TRUE(loaded) << loaded.error().message();
  const DecoderModel& model = loaded->model;
  const std::vector<uint32_t> prompt = SeededTokens(19, 3, 512), continuation = SeededTokens(3, 5, 512);
  threading::ThreadPool pool(2);
  for (WeightFormat requested : {WeightFormat::kAsStored, WeightFormat::kQ2_K}) {
    const double diff = MaxAbsDiff(
        SessionLogits(model, prompt, continuation, Engine(Backend::kFast, Precision::kF32, requested, &pool)),
        SessionLogits(model, prompt, continuation, Engine(Backend::kReference, Precision::kF64, requested)));
    std::cout << "[ q2_k    ] kq-q2_k " << WeightFormatName(requested) << ": |fast f32 - oracle| " << diff << "\n";
    EXPECT_LE(diff, 1e-4) << WeightFormatName(requested);
  }
  size_t kept = 0;
  for (const MatrixWeightFormat& matrix : PlanWeightFormats(model, WeightFormat::kAsStored)) {
    EXPECT_FALSE(matrix.fallback) << matrix.name;
    EXPECT_TRUE(matrix.as_stored) << matrix.name;
    kept += matrix.effective == WeightFormat::kQ2_K;
  }
  // 9 of its 16 matrices (the token table, attn_q/k and ffn_gate/up of both layers):
  // the mix keeps attn_v, attn_output and ffn_down in Q3_K and the head in Q6_K.
  EXPECT_EQ(kept, 9u);
}

TEST(CompressedWeightsTest, StoredBytesAreDroppedOnceAParameterIsUpdated) {
  Result<ModelFile> loaded = ReadModelFile(testing::FixturePath("gguf/tiny-q8_0.gguf"));
  ASSERT_TRUE(loaded) << loaded.error().message();
  DecoderModel model = loaded->model;
  const size_t index = BlockParameterIndex(0, BlockSlot::kQuery);
  const auto stored_plan = PlanWeightFormats(model, WeightFormat::kAsStored);
  ASSERT_EQ(stored_plan[1].parameter, index);
  ASSERT_EQ(stored_plan[1].effective, WeightFormat::kQ8_0);
  std::vector<double> values(model.parameter(index).element_count());
  model.parameter(index).ReadValues(values);
  values[0] += 0.25;
  ASSERT_TRUE(model.UpdateParameters(std::vector<ParameterUpdate>{{index, values}}));
  // The file's bytes no longer describe the values: the matrix is f32 now.
  EXPECT_EQ(model.parameter(index).stored(), nullptr);
  EXPECT_EQ(PlanWeightFormats(model, WeightFormat::kAsStored)[1].effective, WeightFormat::kF32);
  const std::vector<uint32_t> prompt = {1, 450, 4996};
  const auto oracle = SessionLogits(model, prompt, {17354}, ReferenceEngine());
  const auto fast = SessionLogits(model, prompt, {17354}, Engine(Backend::kFast, Precision::kF32, WeightFormat::kAsStored));
  EXPECT_LE(MaxAbsDiff(fast, oracle), 1e-4);
}

// PrepareWeights builds what a session would, ahead of it: every backend, precision and
// format prepares, the sessions afterwards compute the same bits as on a model never
// prepared, and an unknown format is a typed error, not a crash.
TEST(CompressedWeightsTest, PreparedWeightsGiveTheSameSessions) {
  Result<ModelFile> loaded = ReadModelFile(testing::FixturePath("gguf/tiny-q4_0.gguf"));
  ASSERT_TRUE(loaded) << loaded.error().message();
  const std::vector<uint32_t> prompt = {1, 450, 4996};
  size_t index = 0;  // a sanitizer build runs a sample of the combinations
  for (WeightFormat format : kAll) {
    for (const EngineOptions& engine :
         {Engine(Backend::kFast, Precision::kF32, format),
          Engine(Backend::kFast, Precision::kF64, format),
          Engine(Backend::kReference, Precision::kF64, format)}) {
      if (!testing::CaseRunsInThisBuild(index++)) continue;
      const DecoderModel unprepared = *loaded->model.RebuildFromValues();
      const DecoderModel& prepared = loaded->model;
      ASSERT_TRUE(PrepareWeights(prepared, engine)) << WeightFormatName(format);
      EXPECT_EQ(SessionLogits(prepared, prompt, {17354}, engine),
                SessionLogits(unprepared, prompt, {17354}, engine))
          << WeightFormatName(format);
    }
  }
  EngineOptions unknown = Engine(Backend::kFast, Precision::kF32, static_cast<WeightFormat>(99));
  Result<void> refused = PrepareWeights(loaded->model, unknown);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), ErrorCode::kUnsupportedBackend);
}

// D 48 and V 100: every matrix read along K = 48 cannot hold q8_0/q4_0 blocks and
// falls back to f16; the down projection (K = F = 64) keeps the format.
DecoderModel NarrowModel() {
  SplitMix64 rng(48);
  return *DecoderModel::FromSeed(ModelConfig::Create(100, 48, 3, 64, 2, 40, 10000.0, 1e-5), rng);
}

TEST(CompressedWeightsTest, MatricesWithKNotAMultipleOf32FallBackToF16AndSaySo) {
  const DecoderModel model = NarrowModel();
  for (WeightFormat format : {WeightFormat::kQ8_0, WeightFormat::kQ4_0, WeightFormat::kQ5_0, WeightFormat::kQ4_1,
                              WeightFormat::kQ5_1, WeightFormat::kIQ4_NL}) {
    const std::vector<MatrixWeightFormat> plan = PlanWeightFormats(model, format);
    ASSERT_EQ(plan.size(), 1 + 7 * model.config().layers);
    for (const MatrixWeightFormat& matrix : plan) {
      const bool down = matrix.name.find("ffn.down") != std::string::npos;
      EXPECT_EQ(matrix.rows, down ? 64u : 48u) << matrix.name;
      EXPECT_EQ(matrix.fallback, !down) << matrix.name;
      EXPECT_EQ(matrix.effective, down ? format : WeightFormat::kF16) << matrix.name;
      EXPECT_EQ(matrix.wanted, format) << matrix.name;
    }
    const std::string report = DescribeFallbacks(plan);
    EXPECT_NE(report.find("token_embedding.weight " + std::string(WeightFormatName(format)) + " -> f16"),
              std::string::npos)
        << report;
    EXPECT_EQ(report.find("ffn.down"), std::string::npos) << report;
    // And the engines run on it, fast against the oracle.
    const std::vector<uint32_t> prompt = {3, 14, 15, 92, 65};
    const auto oracle = SessionLogits(model, prompt, {35, 89}, Engine(Backend::kReference, Precision::kF64, format));
    const auto fast = SessionLogits(model, prompt, {35, 89}, Engine(Backend::kFast, Precision::kF32, format));
    EXPECT_LE(MaxAbsDiff(fast, oracle), 1e-4) << WeightFormatName(format);
  }
  // bf16 and f16 fit every width.
  for (const MatrixWeightFormat& matrix : PlanWeightFormats(model, WeightFormat::kBf16)) {
    EXPECT_FALSE(matrix.fallback);
  }
  EXPECT_TRUE(DescribeFallbacks(PlanWeightFormats(model, WeightFormat::kF16)).empty());
}


bool IsKQuant(WeightFormat format) {
  return std::find(std::begin(kKQuants), std::end(kKQuants), format) != std::end(kKQuants) ||
         format == WeightFormat::kIQ4_XS;
}

// D 96, F 160, V 300: several panels and task tiles per matrix. The K-quants and
// iq4_xs need every K a multiple of 256: D 256, F 512 for them.
DecoderModel ModelFor(WeightFormat format, bool tied = true) {
  SplitMix64 rng(2024);
  ModelConfig config = IsKQuant(format) ? ModelConfig::Create(300, 256, 4, 512, 2, 80, 10000.0, 1e-5)
                                        : ModelConfig::Create(300, 96, 3, 160, 2, 80, 10000.0, 1e-5);
  config.tied_output = tied;
  return *DecoderModel::FromSeed(config, rng);
}

// The K-quants and iq4_xs fall back as llama.cpp's quantizer does where K is a
// multiple of 32 (the down projection, K = F = 64): q6_k to q8_0, q4_k to q5_0, q5_k
// to q5_1, q2_k, q3_k and iq4_xs to iq4_nl; elsewhere (K = 48) all to f16.
TEST(CompressedWeightsTest, KQuantsFallBackLikeLlamaCpp) {
  const DecoderModel model = NarrowModel();
  const auto down_fallback = [](WeightFormat format) {
    return format == WeightFormat::kQ6_K                                     ? WeightFormat::kQ8_0
           : format == WeightFormat::kQ4_K                                   ? WeightFormat::kQ5_0
           : format == WeightFormat::kQ5_K ? WeightFormat::kQ5_1
           : format == WeightFormat::kIQ4_XS || format == WeightFormat::kQ3_K ||
                   format == WeightFormat::kQ2_K
               ? WeightFormat::kIQ4_NL
               : WeightFormat::kF16;
  };
  for (WeightFormat format : {WeightFormat::kQ4_K, WeightFormat::kQ5_K, WeightFormat::kQ6_K, WeightFormat::kIQ4_XS,
                              WeightFormat::kQ2_K}) {
    for (const MatrixWeightFormat& matrix : PlanWeightFormats(model, format)) {
      const bool down = matrix.name.find("ffn.down") != std::string::npos;
      EXPECT_TRUE(matrix.fallback) << matrix.name;
      const WeightFormat expected = down ? down_fallback(format) : WeightFormat::kF16;
      EXPECT_EQ(matrix.effective, expected) << WeightFormatName(format) << " " << matrix.name;
    }
    const std::string report = DescribeFallbacks(PlanWeightFormats(model, format));
    EXPECT_NE(report.find("blocks.0.ffn.down.weight " + std::string(WeightFormatName(format)) + " -> " +
                          std::string(WeightFormatName(down_fallback(format))) +
                          " (K = 64 is not a multiple of 256)"),
              std::string::npos)
        << report;
    const std::vector<uint32_t> prompt = {3, 14, 15, 92, 65};
    const auto oracle = SessionLogits(model, prompt, {35, 89}, Engine(Backend::kReference, Precision::kF64, format));
    const auto fast = SessionLogits(model, prompt, {35, 89}, Engine(Backend::kFast, Precision::kF32, format));
    EXPECT_LE(MaxAbsDiff(fast, oracle), 1e-4) << WeightFormatName(format);
  }
}

// llama-quantize's mixes on a model whose every K is a multiple of 32 but not of 256
// (D 64, F 96): llama.cpp's fallbacks there, q4_k's q5_0 and q5_k's q5_1, are kept as
// q5_0 and q5_1 (every matrix in the type llama-quantize names); the fast engine runs
// the plan within 1e-4 of the oracle.
TEST(CompressedWeightsTest, MixesKeepQ5_0AndQ5_1) {
  SplitMix64 rng(64);
  const DecoderModel model = *DecoderModel::FromSeed(ModelConfig::Create(100, 64, 4, 96, 2, 40, 10000.0, 1e-5), rng);
  for (WeightFormat mix : {WeightFormat::kQ4_K_S, WeightFormat::kQ4_K_M, WeightFormat::kQ5_K_S, WeightFormat::kQ5_K_M}) {
    size_t q5_0 = 0, q5_1 = 0;
    for (const MatrixWeightFormat& matrix : PlanWeightFormats(model, mix)) {
      EXPECT_EQ(matrix.mix_type, WeightFormatName(matrix.effective)) << WeightFormatName(mix) << " " << matrix.name;
      EXPECT_EQ(matrix.wanted, matrix.effective) << WeightFormatName(mix) << " " << matrix.name;
      q5_0 += matrix.effective == WeightFormat::kQ5_0;
      q5_1 += matrix.effective == WeightFormat::kQ5_1;
    }
    const bool q4 = mix == WeightFormat::kQ4_K_S || mix == WeightFormat::kQ4_K_M;
    EXPECT_EQ(q5_0 > 0, q4) << WeightFormatName(mix);
    // (The q4 mixes give some value and down projections q5_k, hence q5_1, too.)
    if (!q4) {
      EXPECT_GT(q5_1, 0u) << WeightFormatName(mix);
    }
    const std::vector<uint32_t> prompt = {3, 14, 15, 92, 65};
    const auto oracle = SessionLogits(model, prompt, {35, 89}, Engine(Backend::kReference, Precision::kF64, mix));
    const auto fast = SessionLogits(model, prompt, {35, 89}, Engine(Backend::kFast, Precision::kF32, mix));
    EXPECT_LE(MaxAbsDiff(fast, oracle), 1e-4) << WeightFormatName(mix);
  }
}

TEST(CompressedWeightsTest, ResultsAreBitIdenticalForOneTwoAndThreeThreads) {
  const std::vector<uint32_t> prompt = SeededTokens(37, 7, 300), continuation = SeededTokens(4, 8, 300);
  for (WeightFormat format : kCompressed) {
    const DecoderModel model = ModelFor(format, /*tied=*/false);  // an untied head too
    for (const MatrixWeightFormat& matrix : PlanWeightFormats(model, format)) {
      ASSERT_FALSE(matrix.fallback) << matrix.name;
    }
    const auto serial = SessionLogits(model, prompt, continuation, Engine(Backend::kFast, Precision::kF32, format));
    for (size_t threads : {1, 2, 3}) {
      threading::ThreadPool pool(threads);
      EXPECT_EQ(SessionLogits(model, prompt, continuation, Engine(Backend::kFast, Precision::kF32, format, &pool)),
                serial)
          << threads << " threads, " << WeightFormatName(format);
    }
  }
}

TEST(CompressedWeightsTest, DecodingAllocatesNothing) {
  threading::ThreadPool pool(2);
  for (WeightFormat format : kCompressed) {
    const DecoderModel model = ModelFor(format);
    CacheOptions cache_options;
    cache_options.precision = Precision::kF32;
    DecoderKvCache cache = *DecoderKvCache::Create(model, cache_options);
    Result<DecoderKvSession> session = Bind(cache, model, Engine(Backend::kFast, Precision::kF32, format, &pool));
    ASSERT_TRUE(session) << session.error().message();
    ASSERT_TRUE(session->Prefill(SeededTokens(10, 4, 300)));
    ASSERT_TRUE(session->Decode(1));  // warm the pool's workers
    const uint64_t before = testing::HeapAllocationsInProcess();
    for (uint32_t token = 0; token < 50; ++token) ASSERT_TRUE(session->Decode(token));
    EXPECT_EQ(testing::HeapAllocationsInProcess(), before) << WeightFormatName(format);
  }
}

// The K-quants on a model whose every K holds super-blocks, q5_0 (on q5_k's rows),
// q4_1 and q5_1 (q4_k's and q5_k's rows with a block minimum) and iq4_nl (q4_0's rows
// through a table):
// fast f32 within 1e-4 of the oracle on the same dequantized weights, a prompt
// prefilled at once, in chunks and token by token giving the same bits (the kernels'
// MatMul rows are their MatVec).
TEST(CompressedWeightsTest, KQuantsMatchTheOracleAndAreBatchInvariant) {
  const std::vector<uint32_t> prompt = SeededTokens(23, 11, 300), continuation = SeededTokens(3, 12, 300);
  threading::ThreadPool pool(2);
  for (WeightFormat format : {WeightFormat::kQ4_K, WeightFormat::kQ5_K, WeightFormat::kQ6_K, WeightFormat::kQ5_0,
                              WeightFormat::kQ4_1, WeightFormat::kQ5_1, WeightFormat::kIQ4_NL,
                              WeightFormat::kIQ4_XS, WeightFormat::kQ2_K}) {
    const DecoderModel model = ModelFor(format);
    const EngineOptions fast = Engine(Backend::kFast, Precision::kF32, format, &pool);
    const auto oracle = SessionLogits(model, prompt, continuation, Engine(Backend::kReference, Precision::kF64, format));
    const auto whole = SessionLogits(model, prompt, continuation, fast);
    EXPECT_LE(MaxAbsDiff(whole, oracle), 1e-4) << WeightFormatName(format);
    // The same prompt prefilled in steps of 5 rows and of 1 row, and token by token
    // through Decode: every step's logits equal the single prefill's bit for bit.
    for (const size_t rows : {5, 1}) {
      EngineOptions chunked = fast;
      chunked.max_rows_per_step = rows;
      EXPECT_EQ(SessionLogits(model, prompt, continuation, chunked), whole)
          << WeightFormatName(format) << " in steps of " << rows << " rows";
    }
    std::vector<uint32_t> tokens = prompt;
    tokens.insert(tokens.end(), continuation.begin(), continuation.end());
    const auto one_by_one = SessionLogits(model, {tokens[0]}, std::vector<uint32_t>(tokens.begin() + 1, tokens.end()), fast);
    EXPECT_EQ(one_by_one.back(), whole.back()) << WeightFormatName(format) << " token by token";
    EXPECT_EQ(one_by_one[prompt.size() - 1], whole[0]) << WeightFormatName(format) << " token by token";
  }
}

TEST(CompressedWeightsTest, UncachedOracleGenerationRunsOnTheSameWeights) {
  // The complete-prefix reference loop and the cached reference session both run
  // on the dequantized weights: the same tokens, and other ones than f64's.
  const DecoderModel model = NarrowModel();
  const std::vector<uint32_t> prompt = {3, 14, 15};
  GenerationConfig config;
  config.max_new_tokens = 12;
  for (WeightFormat format : {WeightFormat::kQ4_0, WeightFormat::kBf16}) {
    const EngineOptions oracle = Engine(Backend::kReference, Precision::kF64, format);
    SplitMix64 a(1), b(1);
    Result<GenerationResult> cached = GenerateCached(model, prompt, config, a, oracle);
    Result<GenerationResult> uncached = GenerateUncached(model, prompt, config, b, oracle);
    ASSERT_TRUE(cached && uncached);
    EXPECT_EQ(cached->generated, uncached->generated) << WeightFormatName(format);
  }
  config.mode = SamplingMode::TemperatureTopK(1.0, 100);
  std::vector<std::vector<uint32_t>> runs;
  for (WeightFormat format : {WeightFormat::kAsStored, WeightFormat::kQ4_0}) {
    SplitMix64 draws(5);
    Result<GenerationResult> run =
        GenerateUncached(model, prompt, config, draws, Engine(Backend::kReference, Precision::kF64, format));
    ASSERT_TRUE(run);
    runs.push_back(run->generated);
  }
  // Sampling from every logit makes the formats' different weights visible.
  EXPECT_NE(runs[0], runs[1]);
}

size_t ArgMax(const std::vector<double>& logits) {
  return static_cast<size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// Greedy decoding, keeping every step's logits.
struct GreedyRun {
  std::vector<uint32_t> tokens;
  std::vector<std::vector<double>> logits;  // logits[i] chose tokens[i]
};

GreedyRun Greedy(const DecoderModel& model, const std::vector<uint32_t>& prompt, size_t count,
                 WeightFormat format, bool int8_activations = false) {
  GreedyRun run;
  CacheOptions cache_options;
  cache_options.precision = Precision::kF32;
  DecoderKvCache cache = *DecoderKvCache::Create(model, cache_options);
  EngineOptions engine = Engine(Backend::kFast, Precision::kF32, format);
  engine.int8_activations = int8_activations;
  Result<DecoderKvSession> session = Bind(cache, model, engine);
  EXPECT_TRUE(session) << session.error().message();
  Result<StepOutput> step = session->Prefill(prompt);
  for (size_t i = 0; i < count && step; ++i) {
    run.logits.emplace_back(step->logits.begin(), step->logits.end());
    run.tokens.push_back(static_cast<uint32_t>(ArgMax(run.logits.back())));
    if (i + 1 < count) step = session->Decode(run.tokens.back());
  }
  EXPECT_TRUE(step) << step.error().message();
  return run;
}

// The bundled demo model, and the prompt of its first golden sample.
Result<DecoderModel> DemoModel() {
  Result<Checkpoint> checkpoint = LoadCheckpoint(testing::FixturePath("demo/demo.ckpt"));
  if (!checkpoint) return Fail(std::move(checkpoint.error()));
  return checkpoint->BuildModel();
}

std::vector<uint32_t> DemoPrompt() {
  const Json golden = testing::LoadJson(testing::FixturePath("demo/golden.json"));
  return Ids(golden.at("samples")[0].at("prompt_ids"));
}

// The issue asks whether greedy q8_0 agrees with f32 for 32 tokens on the demo
// model and, if not, where they diverge and with what margin. This test prints
// that report and checks it is consistent: at the first divergence each run's
// choice leads its own logits, and f32's margin over q8_0's token is at most
// twice the largest logit difference between the two runs there (the only way
// the two argmaxes can differ).
TEST(CompressedWeightsTest, GreedyQ8_0AgainstF32OnTheDemoModel) {
  Result<DecoderModel> model = DemoModel();
  ASSERT_TRUE(model) << model.error().message();
  const std::vector<uint32_t> prompt = DemoPrompt();
  constexpr size_t kTokens = 32;
  ASSERT_LE(prompt.size() + kTokens, model->config().max_positions);
  const GreedyRun f32 = Greedy(*model, prompt, kTokens, WeightFormat::kF32);
  const GreedyRun q8 = Greedy(*model, prompt, kTokens, WeightFormat::kQ8_0);
  ASSERT_EQ(f32.tokens.size(), kTokens);
  ASSERT_EQ(q8.tokens.size(), kTokens);
  size_t first = 0;
  while (first < kTokens && f32.tokens[first] == q8.tokens[first]) ++first;
  if (first == kTokens) {
    // How close it came: the smallest top-1 margin of the q8_0 run and the
    // largest logit difference between the runs over the 32 steps.
    double smallest_margin = INFINITY, largest = 0.0;
    for (size_t s = 0; s < kTokens; ++s) {
      std::vector<double> sorted = q8.logits[s];
      std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
      smallest_margin = std::min(smallest_margin, sorted[0] - sorted[1]);
      for (size_t i = 0; i < sorted.size(); ++i) {
        largest = std::max(largest, std::fabs(q8.logits[s][i] - f32.logits[s][i]));
      }
    }
    std::cout << "[ greedy  ] q8_0 and f32 agree on all " << kTokens << " tokens (smallest q8_0 top-1 margin "
              << smallest_margin << ", largest logit difference " << largest << ")\n";
    EXPECT_LT(largest, smallest_margin);  // what agreement needs, given both are argmaxes
    EXPECT_GT(largest, 0.0);              // q8_0 did change the weights
    RecordProperty("greedy_agreement", static_cast<int>(kTokens));
    return;
  }
  const std::vector<double>& a = f32.logits[first];
  const std::vector<double>& b = q8.logits[first];
  const uint32_t f32_token = f32.tokens[first], q8_token = q8.tokens[first];
  double largest = 0.0;
  for (size_t i = 0; i < a.size(); ++i) largest = std::max(largest, std::fabs(a[i] - b[i]));
  const double f32_margin = a[f32_token] - a[q8_token];
  const double q8_margin = b[q8_token] - b[f32_token];
  std::cout << "[ greedy  ] q8_0 and f32 agree on the first " << first << " of " << kTokens
            << " tokens; at step " << first << " f32 picks " << f32_token << " (margin " << f32_margin
            << " over " << q8_token << "), q8_0 picks " << q8_token << " (margin " << q8_margin
            << "); largest logit difference there " << largest << "\n";
  RecordProperty("greedy_agreement", static_cast<int>(first));
  EXPECT_GE(f32_margin, 0.0);
  EXPECT_GE(q8_margin, 0.0);
  EXPECT_LE(f32_margin, 2.0 * largest);
}

// The same question with the opt-in int8 activations on the q8_0 (and q4_0)
// weights: they agree with f32 on all 32 tokens of the demo's first sample.
TEST(CompressedWeightsTest, GreedyWithInt8ActivationsAgainstF32OnTheDemoModel) {
  Result<DecoderModel> model = DemoModel();
  ASSERT_TRUE(model) << model.error().message();
  const std::vector<uint32_t> prompt = DemoPrompt();
  constexpr size_t kTokens = 32;
  const GreedyRun f32 = Greedy(*model, prompt, kTokens, WeightFormat::kF32);
  for (WeightFormat format : {WeightFormat::kQ8_0, WeightFormat::kQ4_0}) {
    const GreedyRun int8 = Greedy(*model, prompt, kTokens, format, /*int8_activations=*/true);
    size_t first = 0;
    while (first < kTokens && f32.tokens[first] == int8.tokens[first]) ++first;
    std::cout << "[ greedy  ] " << WeightFormatName(format) << " + int8 activations and f32 agree on the first "
              << first << " of " << kTokens << " tokens\n";
    EXPECT_EQ(int8.tokens, f32.tokens) << WeightFormatName(format);
  }
}

}  // namespace
}  // namespace kvrt
