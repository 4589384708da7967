// Grouped-query attention and untied heads end to end through the llama2.c
// format: a model written and read back runs the same on the reference and the
// fast engine, within the engines' tolerances.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kvrt/generation.h"
#include "kv/decoder_kv_cache.h"
#include "formats/llama2c/llama2c.h"
#include "session/decoder_kv_session.h"
#include "kvrt/threading/thread_pool.h"
#include "llama2c_test_support.h"
#include "generate/generate.h"

namespace kvrt {
namespace {

std::vector<std::vector<double>> StepLogits(const DecoderModel& model, const std::vector<uint32_t>& tokens,
                                            EngineOptions engine) {
  CacheOptions options;
  options.precision = engine.precision;
  DecoderKvCache cache = *DecoderKvCache::Create(model, options);
  Result<DecoderKvSession> session = Bind(cache, model, engine);
  EXPECT_TRUE(session);
  std::vector<std::vector<double>> logits;
  Result<StepOutput> step = session->Prefill(std::span(tokens).first(4));
  EXPECT_TRUE(step);
  logits.emplace_back(step->logits.begin(), step->logits.end());
  for (size_t i = 4; i < tokens.size(); ++i) {
    step = session->Decode(tokens[i]);
    EXPECT_TRUE(step);
    logits.emplace_back(step->logits.begin(), step->logits.end());
  }
  return logits;
}

double MaxAbsDiff(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

TEST(Llama2cGqaTest, ReferenceAndFastEnginesAgreeAfterARoundTrip) {
  testing::ScratchDir dir;
  threading::ThreadPool pool(2);
  for (const auto& [kv_heads, tied] : {std::pair<size_t, bool>{2, false}, {1, true}, {4, false}}) {
    SCOPED_TRACE(std::to_string(kv_heads) + " kv heads");
    ModelConfig config = ModelConfig::Create(320, 64, 4, 96, 3, 32, 10000.0, 1e-5);
    config.kv_heads = kv_heads;
    config.tied_output = tied;
    SplitMix64 rng(kv_heads + 40);
    Result<DecoderModel> seeded = DecoderModel::FromSeed(config, rng, ModelStorage::kPanelsF32);
    ASSERT_TRUE(seeded);
    ASSERT_TRUE(SaveLlama2cModel(*seeded, dir.File("gqa.bin")));
    Result<DecoderModel> model = LoadLlama2cModel(dir.File("gqa.bin"));
    ASSERT_TRUE(model) << model.error().Debug();
    EXPECT_EQ(model->block(0, BlockSlot::kKey).shape(), (std::vector<size_t>{64, 16 * kv_heads}));

    const std::vector<uint32_t> tokens = {1, 259, 300, 17, 42, 5, 319, 1, 2, 250};
    const auto reference = StepLogits(*model, tokens, ReferenceEngine());
    const auto fast32 = StepLogits(*model, tokens, EngineOptions{Backend::kFast, Precision::kF32, 0, &pool});
    const auto fast64 = StepLogits(*model, tokens, EngineOptions{Backend::kFast, Precision::kF64, 0, &pool});
    for (size_t step = 0; step < reference.size(); ++step) {
      EXPECT_LE(MaxAbsDiff(fast32[step], reference[step]), 1e-4) << step;
      EXPECT_LE(MaxAbsDiff(fast64[step], reference[step]), 1e-10) << step;
    }
    // The cache holds kv_heads lanes: GQA shrinks it by heads / kv_heads.
    DecoderKvCache cache = *DecoderKvCache::Create(*model, CacheOptions{.precision = Precision::kF64});
    EXPECT_EQ(cache.layer(0)->heads(), kv_heads);
    EXPECT_EQ(cache.storage_bytes(), 2 * 3 * 32 * 16 * kv_heads * sizeof(double));

    GenerationConfig generation;
    generation.max_new_tokens = 20;
    const std::vector<uint32_t> prompt = {1, 259};
    SplitMix64 a(1), b(1);
    Result<GenerationResult> slow = GenerateCached(*model, prompt, generation, a, ReferenceEngine());
    Result<GenerationResult> fast =
        GenerateCached(*model, prompt, generation, b, EngineOptions{Backend::kFast, Precision::kF32, 0, &pool});
    ASSERT_TRUE(slow && fast);
    EXPECT_EQ(slow->generated, fast->generated);
  }
}

}  // namespace
}  // namespace kvrt
