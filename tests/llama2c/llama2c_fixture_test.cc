// kvrt against llama2.c's own run.c (fixtures/llama2c): the same prompt tokens,
// logits within 1e-4 at every position on both engines, and the same greedy
// continuation.
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

using testing::RunCRecord;

constexpr double kTolerance = 1e-4;

struct Engine {
  const char* name;
  EngineOptions options;
};

std::vector<Engine> Engines(threading::ThreadPool& pool) {
  return {{"reference f64", ReferenceEngine()},
          {"fast f32", EngineOptions{Backend::kFast, Precision::kF32, 0, &pool}},
          {"fast f64", EngineOptions{Backend::kFast, Precision::kF64, 0, &pool}}};
}

double MaxAbsDiff(std::span<const double> kvrt, const float* runc, size_t count) {
  double worst = 0.0;
  for (size_t i = 0; i < count; ++i) worst = std::max(worst, std::abs(kvrt[i] - double{runc[i]}));
  return worst;
}

TEST(Llama2cFixtureTest, TheModelIsTheOneRunCRan) {
  Result<DecoderModel> model = LoadLlama2cModel(RunCRecord().model_path);
  ASSERT_TRUE(model) << model.error().Debug();
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.model_width, 32u);
  EXPECT_EQ(c.feed_forward_width, 96u);
  EXPECT_EQ(c.layers, 2u);
  EXPECT_EQ(c.heads, 4u);
  EXPECT_EQ(c.kv_heads, 2u);
  EXPECT_EQ(c.vocabulary_size, RunCRecord::kVocabulary);
  EXPECT_FALSE(c.tied_output);
  EXPECT_EQ(c.max_positions, 64u);
}

TEST(Llama2cFixtureTest, PromptEncodesToRunCsTokens) {
  const RunCRecord runc = RunCRecord::Load();
  Result<Tokenizer> tokenizer = ReadLlama2cTokenizer(runc.tokenizer_path);
  ASSERT_TRUE(tokenizer) << tokenizer.error().Debug();
  Result<std::vector<uint32_t>> prompt = tokenizer->EncodePrompt(RunCRecord::kPrompt);
  ASSERT_TRUE(prompt);
  EXPECT_EQ(*prompt, std::vector<uint32_t>(runc.tokens.begin(), runc.tokens.begin() + RunCRecord::kPromptTokens));
}

TEST(Llama2cFixtureTest, LogitsMatchRunCAtEveryPosition) {
  const RunCRecord runc = RunCRecord::Load();
  ASSERT_EQ(runc.positions(), runc.tokens.size() - 1);
  Result<DecoderModel> model = LoadLlama2cModel(runc.model_path);
  ASSERT_TRUE(model);
  threading::ThreadPool pool(2);
  for (const Engine& engine : Engines(pool)) {
    SCOPED_TRACE(engine.name);
    CacheOptions cache_options;
    cache_options.precision = engine.options.precision;
    Result<DecoderKvCache> cache = DecoderKvCache::Create(*model, cache_options);
    ASSERT_TRUE(cache);
    Result<DecoderKvSession> session = Bind(*cache, *model, engine.options);
    ASSERT_TRUE(session) << session.error().Debug();
    // One token per step, like run.c.
    double worst = 0.0;
    for (size_t position = 0; position < runc.positions(); ++position) {
      Result<StepOutput> step = position == 0 ? session->Prefill(std::span(runc.tokens).first(1))
                                              : session->Decode(runc.tokens[position]);
      ASSERT_TRUE(step) << step.error().Debug();
      worst = std::max(worst, MaxAbsDiff(step->logits, runc.row(position), RunCRecord::kVocabulary));
      if (position + 1 >= RunCRecord::kPromptTokens) {  // a position whose next token run.c sampled
        const auto best = std::max_element(step->logits.begin(), step->logits.end()) - step->logits.begin();
        EXPECT_EQ(static_cast<uint32_t>(best), runc.tokens[position + 1]) << "position " << position;
      }
    }
    EXPECT_LE(worst, kTolerance);
    RecordProperty(std::string("max_abs_diff_") + engine.name, std::to_string(worst));
    // A whole-prompt prefill ends on the same logits.
    session->Reset();
    Result<StepOutput> prefill = session->Prefill(std::span(runc.tokens).first(RunCRecord::kPromptTokens));
    ASSERT_TRUE(prefill);
    EXPECT_LE(MaxAbsDiff(prefill->logits, runc.row(RunCRecord::kPromptTokens - 1), RunCRecord::kVocabulary),
              kTolerance);
  }
}

TEST(Llama2cFixtureTest, GreedyGenerationEqualsRunC) {
  const RunCRecord runc = RunCRecord::Load();
  Result<DecoderModel> model = LoadLlama2cModel(runc.model_path);
  ASSERT_TRUE(model);
  const std::vector<uint32_t> prompt(runc.tokens.begin(), runc.tokens.begin() + RunCRecord::kPromptTokens);
  const std::vector<uint32_t> expected(runc.tokens.begin() + RunCRecord::kPromptTokens, runc.tokens.end());
  threading::ThreadPool pool(2);
  for (const Engine& engine : Engines(pool)) {
    SCOPED_TRACE(engine.name);
    GenerationConfig config;
    config.max_new_tokens = expected.size();
    config.eos_token = 1;  // run.c stops at BOS
    SplitMix64 rng(0);
    Result<GenerationResult> run = GenerateCached(*model, prompt, config, rng, engine.options);
    ASSERT_TRUE(run) << run.error().Debug();
    EXPECT_EQ(run->generated, expected);
  }
}

}  // namespace
}  // namespace kvrt
