// The public golden cases (fixtures/golden, FORMAT.md): seeded parameters,
// complete-prefix and cached logits, both generation loops and every request error,
// all bit for bit against the reference crate.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "golden_case.h"
#include "kvrt/generation.h"
#include "kv/decoder_kv_cache.h"
#include "model/decoder_model.h"
#include "engine/reference/complete_prefix.h"
#include "session/decoder_kv_session.h"
#include "generate/generate.h"

namespace kvrt {
namespace {

using testing::BitsOf;
using testing::F64;
using testing::F64Vector;
using testing::Ids;
using testing::Json;
using testing::State;

void ExpectBits(std::span<const double> actual, const std::vector<double>& expected,
                const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(BitsOf(actual[i]), BitsOf(expected[i])) << what << " element " << i;
  }
}

class GoldenCaseTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    case_ = testing::LoadJson(GetParam());
    SplitMix64 rng(case_.at("init").at("seed").get<uint64_t>());
    Result<DecoderModel> model =
        DecoderModel::FromSeed(testing::GoldenConfig(case_.at("config")), rng);
    ASSERT_TRUE(model) << model.error().message();
    model_ = std::make_unique<DecoderModel>(std::move(*model));
    rng_after_init_ = rng.state();
  }

  Json case_;
  std::unique_ptr<DecoderModel> model_;
  uint64_t rng_after_init_ = 0;
};

TEST_P(GoldenCaseTest, SeededParametersMatch) {
  EXPECT_EQ(rng_after_init_, State(case_.at("init").at("rng_state_after_init")));
  const Json& parameters = case_.at("parameters");
  ASSERT_EQ(parameters.size(), model_->parameters().size());
  for (size_t i = 0; i < parameters.size(); ++i) {
    const Parameter& parameter = model_->parameter(i);
    EXPECT_EQ(parameter.name(), parameters[i].at("name").get<std::string>());
    EXPECT_EQ(parameter.shape(), parameters[i].at("shape").get<std::vector<size_t>>());
    const std::vector<double> first = F64Vector(parameters[i].at("first"));
    ExpectBits(parameter.values().first(first.size()), first, parameter.name());
    EXPECT_EQ(BitsOf(parameter.values().back()), BitsOf(F64(parameters[i].at("last"))))
        << parameter.name();
  }
}

TEST_P(GoldenCaseTest, CompletePrefixAndCachedLogitsAreBitExact) {
  for (const Json& prompt_case : case_.at("prompts")) {
    const std::vector<uint32_t> prompt = Ids(prompt_case.at("prompt"));
    const std::vector<uint32_t> continuation = Ids(prompt_case.at("continuation"));
    const std::string name = prompt_case.at("name");
    for (const Json& full : prompt_case.at("full_forward")) {
      const size_t length = full.at("prefix_length");
      std::vector<uint32_t> prefix = prompt;
      prefix.insert(prefix.end(), continuation.begin(),
                    continuation.begin() + (length - prompt.size()));
      Result<std::vector<double>> logits = LastLogitsCompletePrefix(*model_, prefix);
      ASSERT_TRUE(logits) << logits.error().message();
      ExpectBits(*logits, F64Vector(full.at("logits")),
                 name + " complete prefix " + std::to_string(length));
    }

    const Json& cached = prompt_case.at("cached");
    Result<DecoderKvCache> cache = DecoderKvCache::Create(*model_, CacheOptions{.precision = Precision::kF64});
    ASSERT_TRUE(cache);
    Result<DecoderKvSession> session = Bind(*cache, *model_, ReferenceEngine());
    ASSERT_TRUE(session) << session.error().message();
    Result<StepOutput> prefill = session->Prefill(prompt);
    ASSERT_TRUE(prefill) << prefill.error().message();
    EXPECT_EQ(prefill->position, cached.at("prefill").at("position").get<size_t>());
    EXPECT_EQ(prefill->cache_len, cached.at("prefill").at("cache_len").get<size_t>());
    EXPECT_EQ(prefill->attention_score_values,
              cached.at("prefill").at("attention_score_values").get<uint64_t>());
    ExpectBits(prefill->logits, F64Vector(cached.at("prefill").at("logits")), name + " prefill");
    const Json& decodes = cached.at("decodes");
    for (size_t i = 0; i < decodes.size(); ++i) {
      Result<StepOutput> decode = session->Decode(decodes[i].at("token_id"));
      ASSERT_TRUE(decode) << decode.error().message();
      EXPECT_EQ(decode->position, decodes[i].at("position").get<size_t>());
      EXPECT_EQ(decode->cache_len, decodes[i].at("cache_len").get<size_t>());
      EXPECT_EQ(decode->attention_score_values,
                decodes[i].at("attention_score_values").get<uint64_t>());
      ExpectBits(decode->logits, F64Vector(decodes[i].at("logits")),
                 name + " decode " + std::to_string(i));
    }
    const DecoderKvCache& state = session->cache();
    EXPECT_EQ(state.len(), cached.at("final_cache_len").get<size_t>());
    EXPECT_EQ(state.is_full(), cached.at("cache_full").get<bool>());
    const Json& work = cached.at("work");
    EXPECT_EQ(state.work().token_forwards, work.at("token_forwards").get<uint64_t>());
    EXPECT_EQ(state.work().prefill_tokens, work.at("prefill_tokens").get<uint64_t>());
    EXPECT_EQ(state.work().decode_tokens, work.at("decode_tokens").get<uint64_t>());
    EXPECT_EQ(state.work().cache_appends, work.at("cache_appends").get<uint64_t>());
    EXPECT_EQ(state.work().qkv_projection_rows, work.at("qkv_projection_rows").get<uint64_t>());
    EXPECT_EQ(state.work().attention_score_values,
              work.at("attention_score_values").get<uint64_t>());
    for (size_t l = 0; l < state.layer_count(); ++l) EXPECT_EQ(state.layer_len(l), state.len());
  }
}

void ExpectRun(const GenerationResult& actual, const Json& expected, const std::string& what) {
  EXPECT_EQ(actual.generated, Ids(expected.at("generated"))) << what;
  EXPECT_EQ(std::string(GenerationStopName(actual.stop)),
            testing::GoldenStopName(expected.at("stop")))
      << what;
  const Json& steps = expected.at("steps");
  ASSERT_EQ(actual.steps.size(), steps.size()) << what;
  for (size_t i = 0; i < steps.size(); ++i) {
    const GenerationStep& step = actual.steps[i];
    EXPECT_EQ(step.prefix_length, steps[i].at("prefix_length").get<size_t>()) << what;
    EXPECT_EQ(step.token_id, steps[i].at("token_id").get<uint32_t>()) << what;
    if (steps[i].at("unit_draw").is_null()) {
      EXPECT_FALSE(step.unit_draw.has_value()) << what;
    } else {
      ASSERT_TRUE(step.unit_draw.has_value()) << what;
      EXPECT_EQ(BitsOf(*step.unit_draw), BitsOf(F64(steps[i].at("unit_draw")))) << what;
    }
    EXPECT_EQ(BitsOf(step.interval_start), BitsOf(F64(steps[i].at("interval_start")))) << what;
    EXPECT_EQ(BitsOf(step.interval_end), BitsOf(F64(steps[i].at("interval_end")))) << what;
  }
}

TEST_P(GoldenCaseTest, BothGenerationLoopsMatchEveryStep) {
  for (const Json& request : case_.at("generation")) {
    const std::string name = request.at("name");
    const std::vector<uint32_t> prompt = Ids(request.at("prompt"));
    const GenerationConfig config = testing::GoldenRequest(request);

    SplitMix64 cached_rng(State(request.at("rng_state")));
    Result<GenerationResult> cached = GenerateCached(*model_, prompt, config, cached_rng, ReferenceEngine());
    ASSERT_TRUE(cached) << name << ": " << cached.error().message();
    ExpectRun(*cached, request.at("cached"), name + " cached");
    EXPECT_EQ(cached_rng.state(), State(request.at("cached").at("final_rng_state"))) << name;
    EXPECT_EQ(cached->final_cache_len, request.at("cached").at("final_cache_len").get<size_t>())
        << name;
    const Json& work = request.at("cached").at("work");
    EXPECT_EQ(cached->work.prefill_tokens, work.at("prefill_tokens").get<uint64_t>()) << name;
    EXPECT_EQ(cached->work.decode_tokens, work.at("decode_tokens").get<uint64_t>()) << name;
    EXPECT_EQ(cached->work.layer_cache_count, work.at("layer_cache_count").get<uint64_t>()) << name;
    EXPECT_EQ(cached->work.cache_appends, work.at("cache_appends").get<uint64_t>()) << name;
    EXPECT_EQ(cached->work.qkv_projection_rows, work.at("qkv_projection_rows").get<uint64_t>())
        << name;
    EXPECT_EQ(cached->work.cached_attention_score_values,
              work.at("cached_attention_score_values").get<uint64_t>())
        << name;
    EXPECT_EQ(cached->work.complete_prefix_attention_score_values,
              work.at("complete_prefix_attention_score_values").get<uint64_t>())
        << name;

    SplitMix64 uncached_rng(State(request.at("rng_state")));
    Result<GenerationResult> uncached = GenerateUncached(*model_, prompt, config, uncached_rng, ReferenceEngine());
    ASSERT_TRUE(uncached) << name << ": " << uncached.error().message();
    ExpectRun(*uncached, request.at("uncached"), name + " uncached");
    EXPECT_EQ(uncached_rng.state(), State(request.at("uncached").at("final_rng_state"))) << name;
    EXPECT_EQ(uncached->model_calls, request.at("uncached").at("full_prefix_calls").get<size_t>())
        << name;
  }
}

TEST_P(GoldenCaseTest, GenerationRequestErrorsMatchAndNeverDraw) {
  for (const Json& request : case_.at("errors").at("generation")) {
    const std::string name = request.at("name");
    const std::vector<uint32_t> prompt = Ids(request.at("prompt"));
    const GenerationConfig config = testing::GoldenRequest(request);
    for (const bool cached : {true, false}) {
      const uint64_t start = State(request.at("rng_state"));
      SplitMix64 rng(start);
      Result<GenerationResult> result = cached ? GenerateCached(*model_, prompt, config, rng, ReferenceEngine())
                                               : GenerateUncached(*model_, prompt, config, rng, ReferenceEngine());
      const Json& expected = request.at(cached ? "cached" : "uncached");
      ASSERT_FALSE(result) << name;
      EXPECT_EQ(result.error().Debug(), expected.at("debug").get<std::string>()) << name;
      EXPECT_EQ(result.error().message(), expected.at("display").get<std::string>()) << name;
      EXPECT_EQ(std::string(result.error().name()), expected.at("variant").get<std::string>())
          << name;
      EXPECT_EQ(rng.state(), start) << name;
    }
  }
}

TEST_P(GoldenCaseTest, ModelAndCacheErrorsMatchAndChangeNothing) {
  for (const Json& entry : case_.at("errors").at("model_and_cache")) {
    const std::string name = entry.at("name");
    const std::vector<uint32_t> tokens = Ids(entry.at("tokens"));
    const Json& expected = entry.at("error");
    std::optional<Error> error;
    if (name.rfind("forward_", 0) == 0) {
      const size_t shape[2] = {1, tokens.size()};
      Result<std::vector<double>> logits = ForwardCompletePrefix(*model_, tokens, shape);
      ASSERT_FALSE(logits) << name;
      error = logits.error();
    } else {
      Result<DecoderKvCache> cache = DecoderKvCache::Create(*model_, CacheOptions{.precision = Precision::kF64});
      ASSERT_TRUE(cache);
      Result<DecoderKvSession> session = Bind(*cache, *model_, ReferenceEngine());
      ASSERT_TRUE(session);
      if (!entry.at("prefilled").is_null()) {
        ASSERT_TRUE(session->Prefill(Ids(entry.at("prefilled"))));
      }
      EXPECT_EQ(session->cache().len(), entry.at("cache_len_before").get<size_t>()) << name;
      Result<DecoderKvCache> before = session->cache().Clone();
      ASSERT_TRUE(before);
      const bool decode = name.rfind("kv_decode", 0) == 0;
      Result<StepOutput> output = decode ? session->Decode(tokens.at(0)) : session->Prefill(tokens);
      ASSERT_FALSE(output) << name;
      error = output.error();
      EXPECT_EQ(session->cache().len(), entry.at("cache_len_after").get<size_t>()) << name;
      EXPECT_TRUE(session->cache() == *before) << name << ": a rejected call changed the cache";
    }
    EXPECT_EQ(error->Debug(), expected.at("debug").get<std::string>()) << name;
    EXPECT_EQ(error->message(), expected.at("display").get<std::string>()) << name;
  }
}

std::string CaseName(const ::testing::TestParamInfo<std::string>& info) {
  return std::filesystem::path(info.param).stem().string();
}

INSTANTIATE_TEST_SUITE_P(PublicGoldenCases, GoldenCaseTest,
                         ::testing::ValuesIn(testing::GoldenCasePaths()), CaseName);

}  // namespace
}  // namespace kvrt
