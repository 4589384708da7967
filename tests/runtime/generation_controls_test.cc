// The generation loops with the sampler set and the controls: identity values
// change nothing; the loop picks what a TokenSampler fed the same logits picks;
// log-probabilities are the temperature-1 softmax of the shaped logits; the
// decode loop still allocates nothing per token; cancellation, end-token sets
// and the context size.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "allocation_counter.h"
#include "generate/generate.h"
#include "kvrt/generation.h"
#include "kvrt/sampling.h"
#include "kvrt/tokenizer.h"
#include "session/owned_session.h"

namespace kvrt {
namespace {

constexpr size_t kVocabulary = 48;

DecoderModel SmallModel() {
  SplitMix64 rng(4141);
  return *DecoderModel::FromSeed(ModelConfig::Create(kVocabulary, 16, 2, 24, 2, 96, 1e4, 1e-6), rng);
}

Tokenizer Letters() {
  std::vector<std::string> pieces;
  for (size_t i = 0; i < kVocabulary; ++i) pieces.push_back(std::string(1, static_cast<char>('0' + i)));
  return *Tokenizer::Literal(pieces);
}

GenerationConfig EverySampler() {
  GenerationConfig config;
  config.mode = SamplingMode::TemperatureTopK(0.9, 30);
  config.sampler.logit_bias = {{3, 1.5}, {7, -2.0}};
  config.sampler.repetition_penalty = 1.2;
  config.sampler.frequency_penalty = 0.1;
  config.sampler.presence_penalty = 0.3;
  config.sampler.penalty_last_n = 12;
  config.sampler.typical_p = 0.97;
  config.sampler.top_p = 0.93;
  config.sampler.min_p = 0.02;
  config.max_new_tokens = 40;
  return config;
}

const std::vector<uint32_t> kPrompt = {1, 2, 3, 4, 5, 3, 3};

bool SameSteps(const GenerationResult& a, const GenerationResult& b) {
  if (a.steps.size() != b.steps.size() || a.generated != b.generated || a.stop != b.stop) return false;
  for (size_t i = 0; i < a.steps.size(); ++i) {
    const GenerationStep& x = a.steps[i];
    const GenerationStep& y = b.steps[i];
    const auto bits = [](std::optional<double> v) { return v ? std::bit_cast<uint64_t>(*v) : ~uint64_t{0}; };
    if (x.token_id != y.token_id || bits(x.unit_draw) != bits(y.unit_draw) ||
        bits(x.interval_start) != bits(y.interval_start) || bits(x.interval_end) != bits(y.interval_end) ||
        bits(x.logprob) != bits(y.logprob)) {
      return false;
    }
  }
  return a.top_logprobs == b.top_logprobs;
}

TEST(GenerationControlsTest, IdentityValuesChangeNoTokenAndNoDraw) {
  const DecoderModel model = SmallModel();
  for (uint64_t seed = 0; seed < 20; ++seed) {
    GenerationConfig plain;
    plain.mode = SamplingMode::TemperatureTopK(0.8 + 0.05 * static_cast<double>(seed), kVocabulary);
    plain.max_new_tokens = 24;
    GenerationConfig identity = plain;
    identity.mode = SamplingMode::Temperature(plain.mode.temperature);  // no top-k is k = V
    identity.sampler.top_p = 1.0;
    identity.sampler.min_p = 0.0;
    identity.sampler.typical_p = 1.0;
    identity.sampler.repetition_penalty = 1.0;
    identity.sampler.frequency_penalty = 0.0;
    identity.sampler.presence_penalty = 0.0;
    identity.sampler.penalty_last_n = -1;
    SplitMix64 plain_rng(seed), identity_rng(seed);
    Result<GenerationResult> a = GenerateCached(model, kPrompt, plain, plain_rng, ReferenceEngine());
    Result<GenerationResult> b = GenerateCached(model, kPrompt, identity, identity_rng, ReferenceEngine());
    ASSERT_TRUE(a && b);
    EXPECT_TRUE(SameSteps(*a, *b)) << seed;
    EXPECT_EQ(plain_rng.state(), identity_rng.state()) << seed;
  }
}

TEST(GenerationControlsTest, TheLoopPicksWhatATokenSamplerFedTheSameLogitsPicks) {
  const DecoderModel model = SmallModel();
  const GenerationConfig config = EverySampler();
  for (uint64_t seed : {1u, 2u, 3u}) {
    SplitMix64 rng(seed);
    Result<GenerationResult> run = GenerateCached(model, kPrompt, config, rng, ReferenceEngine());
    ASSERT_TRUE(run) << run.error().message();
    ASSERT_EQ(run->generated.size(), config.max_new_tokens);

    Result<TokenSampler> sampler = TokenSampler::Create(config.mode, config.sampler, kVocabulary, seed);
    ASSERT_TRUE(sampler);
    for (const uint32_t token : kPrompt) ASSERT_TRUE(sampler->Accept(token));
    Result<OwnedSession> session = OwnedSession::Open(model, ReferenceEngine());
    ASSERT_TRUE(session);
    Result<StepOutput> out = session->session().Prefill(kPrompt);
    for (size_t i = 0; i < run->generated.size(); ++i) {
      ASSERT_TRUE(out);
      Result<TokenSelection> pick = sampler->Sample(out->logits);
      ASSERT_TRUE(pick);
      EXPECT_EQ(pick->token_id, run->generated[i]) << seed << " step " << i;
      ASSERT_TRUE(sampler->Accept(pick->token_id));
      out = session->session().Decode(pick->token_id);
    }
    EXPECT_EQ(sampler->rng_state(), rng.state());

    // The uncached loop (complete-prefix pass) draws the same.
    SplitMix64 uncached_rng(seed);
    Result<GenerationResult> uncached = GenerateUncached(model, kPrompt, config, uncached_rng, ReferenceEngine());
    ASSERT_TRUE(uncached);
    EXPECT_TRUE(SameSteps(*run, *uncached)) << seed;
  }
}

TEST(GenerationControlsTest, LogprobsAreTheTemperatureOneSoftmaxOfTheShapedLogits) {
  const DecoderModel model = SmallModel();
  GenerationConfig config = EverySampler();
  config.top_logprobs = kVocabulary;
  SplitMix64 rng(8);
  Result<GenerationResult> run = GenerateCached(model, kPrompt, config, rng, ReferenceEngine());
  ASSERT_TRUE(run);
  ASSERT_EQ(run->top_logprobs.size(), run->steps.size() * kVocabulary);
  for (size_t i = 0; i < run->steps.size(); ++i) {
    const std::span<const TokenLogprob> all = run->TopLogprobs(i);
    double total = 0.0;
    bool chosen_listed = false;
    for (size_t j = 0; j < all.size(); ++j) {
      total += std::exp(all[j].logprob);
      if (j > 0) {
        EXPECT_GE(all[j - 1].logprob, all[j].logprob);
      }
      if (all[j].token_id == run->steps[i].token_id) {
        chosen_listed = true;
        EXPECT_EQ(std::bit_cast<uint64_t>(all[j].logprob), std::bit_cast<uint64_t>(*run->steps[i].logprob));
      }
    }
    EXPECT_NEAR(total, 1.0, 1e-12) << i;
    EXPECT_TRUE(chosen_listed) << i;
  }
  // Recording them changes no pick and no draw.
  GenerationConfig without = EverySampler();
  SplitMix64 rng_without(8);
  Result<GenerationResult> plain = GenerateCached(model, kPrompt, without, rng_without, ReferenceEngine());
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->generated, run->generated);
  EXPECT_EQ(rng_without.state(), rng.state());
  EXPECT_FALSE(plain->steps[0].logprob);
}

TEST(GenerationControlsTest, TheDecodeLoopAllocatesNothingPerTokenWithEverySamplerOn) {
  const DecoderModel model = SmallModel();
  GenerationConfig config = EverySampler();
  config.tokenizer = Letters();
  config.stop = {"no such text", "@@"};
  config.top_logprobs = 5;
  auto allocations_for = [&](size_t tokens) {
    config.max_new_tokens = tokens;
    SplitMix64 rng(9);
    size_t streamed = 0;
    const TokenCallback count = [&](const StreamedToken&) {
      ++streamed;
      return StreamAction::kContinue;
    };
    const uint64_t before = testing::HeapAllocationsOnThisThread();
    Result<GenerationResult> run = GenerateCached(model, kPrompt, config, rng, ReferenceEngine(), count);
    const uint64_t allocations = testing::HeapAllocationsOnThisThread() - before;
    EXPECT_TRUE(run);
    EXPECT_EQ(run->generated.size(), tokens);
    EXPECT_EQ(streamed, tokens);
    return allocations;
  };
  EXPECT_EQ(allocations_for(20), allocations_for(60));  // both texts past std::string's inline buffer
}

TEST(GenerationControlsTest, TheCallbackCancelsAndEndTokensAndTheContextSizeStop) {
  const DecoderModel model = SmallModel();
  GenerationConfig config = EverySampler();
  config.tokenizer = Letters();
  SplitMix64 rng(5);
  Result<GenerationResult> full = GenerateCached(model, kPrompt, config, rng, ReferenceEngine());
  ASSERT_TRUE(full);

  size_t seen = 0;
  const TokenCallback cancel_at_five = [&](const StreamedToken&) {
    return ++seen == 5 ? StreamAction::kCancel : StreamAction::kContinue;
  };
  SplitMix64 cancel_rng(5);
  Result<GenerationResult> cancelled =
      GenerateCached(model, kPrompt, config, cancel_rng, ReferenceEngine(), cancel_at_five);
  ASSERT_TRUE(cancelled);
  EXPECT_EQ(cancelled->stop, GenerationStop::kCancelled);
  EXPECT_EQ(GenerationStopName(cancelled->stop), "cancelled");
  EXPECT_EQ(cancelled->generated, std::vector<uint32_t>(full->generated.begin(), full->generated.begin() + 5));
  EXPECT_EQ(cancelled->work.decode_tokens, 4u);  // no decode after the cancelled token
  EXPECT_EQ(cancelled->text, full->text->substr(0, 5));

  // The fourth token of the full run, listed among several end ids, ends the run there.
  GenerationConfig ends = config;
  ends.end_of_generation = {kVocabulary - 1, full->generated[3]};
  const auto ends_early = [&](uint32_t token) { return token == ends.end_of_generation[0] || token == ends.end_of_generation[1]; };
  if (!ends_early(full->generated[0]) && !ends_early(full->generated[1]) && !ends_early(full->generated[2])) {
    SplitMix64 end_rng(5);
    Result<GenerationResult> ended = GenerateCached(model, kPrompt, ends, end_rng, ReferenceEngine());
    ASSERT_TRUE(ended);
    EXPECT_EQ(ended->stop, GenerationStop::kEos);
    EXPECT_EQ(ended->generated.size(), 4u);
    EXPECT_EQ(ended->text, full->text->substr(0, 3));  // an end token is not text
  }

  GenerationConfig short_context = config;
  short_context.context_size = kPrompt.size() + 4;
  SplitMix64 context_rng(5);
  Result<GenerationResult> limited = GenerateCached(model, kPrompt, short_context, context_rng, ReferenceEngine());
  ASSERT_TRUE(limited);
  EXPECT_EQ(limited->stop, GenerationStop::kContextLimit);
  EXPECT_EQ(limited->generated.size(), 5u);
  EXPECT_EQ(limited->final_cache_len, kPrompt.size() + 4);
  short_context.context_size = 97;
  SplitMix64 unused(5);
  Result<GenerationResult> too_long = GenerateCached(model, kPrompt, short_context, unused, ReferenceEngine());
  ASSERT_FALSE(too_long);
  EXPECT_EQ(too_long.error().code(), ErrorCode::kCapacityExceedsPositions);
  EXPECT_EQ(unused.state(), 5u);
}

TEST(GenerationControlsTest, BadSettingsFailValidationWithoutADraw) {
  const DecoderModel model = SmallModel();
  const std::vector<std::pair<GenerationConfig, std::string>> cases = [] {
    std::vector<std::pair<GenerationConfig, std::string>> out;
    GenerationConfig c;
    c.max_new_tokens = 3;
    c.sampler.top_p = -0.5;
    out.push_back({c, "Sampling(InvalidSamplerSetting { setting: top_p, value: -0.5 })"});
    c = {};
    c.max_new_tokens = 3;
    c.sampler.logit_bias = {{kVocabulary, 1.0}};
    out.push_back({c, "Sampling(LogitBiasOutOfBounds { token_id: 48, vocabulary_size: 48 })"});
    c = {};
    c.max_new_tokens = 3;
    c.end_of_generation = {1, kVocabulary};
    out.push_back({c, "EosTokenOutOfBounds { token_id: 48, vocabulary_size: 48 }"});
    c = {};
    c.max_new_tokens = 3;
    c.top_logprobs = kVocabulary + 1;
    out.push_back({c, "InvalidSamplerSetting { setting: top_logprobs, value: 49 }"});
    return out;
  }();
  for (const auto& [config, debug] : cases) {
    SplitMix64 rng(77);
    Result<GenerationResult> run = GenerateCached(model, kPrompt, config, rng, ReferenceEngine());
    ASSERT_FALSE(run);
    EXPECT_EQ(run.error().Debug(), debug);
    EXPECT_EQ(rng.state(), 77u);
  }
}

}  // namespace
}  // namespace kvrt
