// The nine generation scenarios of fixtures/sampling/sampling_check.txt section 4:
// the loop driven by the recorded logits (no model), and both loops driven by the
// seeded tiny decoders that produced those logits.
#include "kvrt/generation.h"

#include <gtest/gtest.h>

#include <deque>

#include "allocation_counter.h"
#include "generate/generation_loop.h"
#include "sampling_check.h"
#include "generate/generate.h"

namespace kvrt {
namespace {

using testing::BitsOf;
using testing::CheckFloat;
using testing::Fields;
using testing::Hex;
using testing::IdList;

struct Scenario {
  std::string name;
  size_t layers = 0, max_positions = 0;
  uint64_t model_seed = 0, rng_seed = 0;
  std::vector<uint32_t> prompt;
  GenerationConfig request;
  std::vector<std::map<std::string, std::string>> steps;
  std::vector<std::vector<double>> step_logits;
  std::map<std::string, std::string> result;
};

std::vector<Scenario> Scenarios() {
  std::vector<Scenario> scenarios;
  for (const std::string& line : testing::SamplingCheckLines()) {
    const std::string kind = line.substr(0, line.find(' '));
    if (kind == "GEN") {
      std::map<std::string, std::string> f = Fields(line);
      Scenario s;
      s.name = line.substr(4, line.find(' ', 4) - 4);
      s.layers = std::stoul(f["layers"]);
      s.max_positions = std::stoul(f["max_positions"]);
      s.model_seed = std::stoull(f["model_seed"]);
      s.rng_seed = Hex(f["rng_seed"]);
      s.prompt = IdList(f["prompt"]);
      s.request.mode = testing::ModeOf(line.substr(line.find("mode:")));
      if (f["eos"] != "none") s.request.eos_token = static_cast<uint32_t>(std::stoul(f["eos"]));
      s.request.max_new_tokens = std::stoul(f["max_new_tokens"]);
      scenarios.push_back(s);
    } else if (kind == "STEP") {
      scenarios.back().steps.push_back(Fields(line));
      scenarios.back().step_logits.push_back(testing::CheckFloatList(Fields(line)["logits"]));
    } else if (kind == "RESULT") {
      scenarios.back().result = Fields(line);
    }
  }
  return scenarios;
}

// "tiny decoder (vocab 5, width 4, 2 heads, ff 4)" of the check file's section 4.
ModelConfig TinyConfig(const Scenario& s) {
  return ModelConfig::Create(5, 4, 2, 4, s.layers, s.max_positions, 10000.0, 1e-6);
}

void ExpectSteps(const Scenario& s, const std::vector<GenerationStep>& steps) {
  ASSERT_EQ(steps.size(), s.steps.size()) << s.name;
  for (size_t i = 0; i < steps.size(); ++i) {
    std::map<std::string, std::string> f = s.steps[i];
    EXPECT_EQ(steps[i].prefix_length, std::stoul(f["prefix_length"])) << s.name;
    EXPECT_EQ(steps[i].token_id, std::stoul(f["token"])) << s.name;
    if (f["draw"] == "none") {
      EXPECT_FALSE(steps[i].unit_draw) << s.name;
    } else {
      ASSERT_TRUE(steps[i].unit_draw) << s.name;
      EXPECT_EQ(BitsOf(*steps[i].unit_draw), BitsOf(CheckFloat(f["draw"]))) << s.name;
    }
    EXPECT_EQ(BitsOf(steps[i].interval_start), BitsOf(CheckFloat(f["start"]))) << s.name;
    EXPECT_EQ(BitsOf(steps[i].interval_end), BitsOf(CheckFloat(f["end"]))) << s.name;
  }
}

// Replays the recorded logits one step at a time.
class ScriptedLogits final : public LogitSource {
 public:
  explicit ScriptedLogits(const std::vector<std::vector<double>>& script) : script_(script) {}
  Result<std::span<const double>> First(std::span<const uint32_t>) override { return Take(); }
  Result<std::span<const double>> Next(std::span<const uint32_t>, uint32_t) override { return Take(); }
  size_t calls() const override { return next_; }

 private:
  Result<std::span<const double>> Take() {
    if (next_ >= script_.size()) return Fail(ErrorCode::kInvalidArgument, {}, "script exhausted");
    return std::span<const double>(script_[next_++]);
  }
  const std::vector<std::vector<double>>& script_;
  size_t next_ = 0;
};

TEST(GenerationScenarioTest, TheLoopReproducesEveryScenarioFromRecordedLogits) {
  const std::vector<Scenario> scenarios = Scenarios();
  ASSERT_EQ(scenarios.size(), 9u);
  for (const Scenario& s : scenarios) {
    SplitMix64 rng(s.rng_seed);
    GenerationResult result;
    result.prompt = s.prompt;
    ScriptedLogits script(s.step_logits);
    if (s.request.max_new_tokens > 0) {
      ASSERT_TRUE(RunGenerationLoop(TinyConfig(s), s.request, rng, script, {}, result)) << s.name;
    }
    std::map<std::string, std::string> r = s.result;
    EXPECT_EQ(result.generated, IdList(r["generated"])) << s.name;
    if (s.request.max_new_tokens > 0) {
      EXPECT_EQ(GenerationStopName(result.stop), r["stop"]) << s.name;
    }
    EXPECT_EQ(result.model_calls, std::stoul(r["full_prefix_calls"])) << s.name;
    EXPECT_EQ(rng.state(), Hex(r["rng_final"])) << s.name;
    ExpectSteps(s, result.steps);
  }
}

TEST(GenerationScenarioTest, BothLoopsOnTheSeededDecodersMatchTheReference) {
  for (const Scenario& s : Scenarios()) {
    SplitMix64 model_rng(s.model_seed);
    Result<DecoderModel> model = DecoderModel::FromSeed(TinyConfig(s), model_rng);
    ASSERT_TRUE(model);
    std::map<std::string, std::string> r = s.result;

    SplitMix64 uncached_rng(s.rng_seed);
    Result<GenerationResult> uncached = GenerateUncached(*model, s.prompt, s.request, uncached_rng, ReferenceEngine());
    ASSERT_TRUE(uncached) << s.name << ": " << uncached.error().message();
    EXPECT_EQ(uncached->generated, IdList(r["generated"])) << s.name;
    EXPECT_EQ(GenerationStopName(uncached->stop), r["stop"]) << s.name;
    EXPECT_EQ(uncached->model_calls, std::stoul(r["full_prefix_calls"])) << s.name;
    EXPECT_EQ(uncached_rng.state(), Hex(r["rng_final"])) << s.name;
    ExpectSteps(s, uncached->steps);

    SplitMix64 cached_rng(s.rng_seed);
    Result<GenerationResult> cached = GenerateCached(*model, s.prompt, s.request, cached_rng, ReferenceEngine());
    ASSERT_TRUE(cached) << s.name << ": " << cached.error().message();
    EXPECT_EQ(cached->generated, IdList(r["cached_generated"])) << s.name;
    EXPECT_EQ(GenerationStopName(cached->stop), r["cached_stop"]) << s.name;
    EXPECT_EQ(cached->final_cache_len, std::stoul(r["cached_final_cache_len"])) << s.name;
    EXPECT_EQ(cached->work.prefill_tokens, std::stoul(r["cached_prefill_tokens"])) << s.name;
    EXPECT_EQ(cached->work.decode_tokens, std::stoul(r["cached_decode_tokens"])) << s.name;
    EXPECT_EQ(cached_rng.state(), Hex(r["cached_rng_final"])) << s.name;
    ExpectSteps(s, cached->steps);
  }
}

TEST(GenerationScenarioTest, TheDecodeLoopAllocatesNothingPerToken) {
  SplitMix64 model_rng(36);
  const DecoderModel model = *DecoderModel::FromSeed(ModelConfig::Create(5, 4, 2, 4, 1, 64, 1e4, 1e-6), model_rng);
  GenerationConfig request;
  request.mode = SamplingMode::TemperatureTopK(1.5, 5);
  // The allocation count of a run does not depend on how many tokens it decodes.
  auto allocations_for = [&](size_t tokens) {
    request.max_new_tokens = tokens;
    SplitMix64 rng(9);
    const uint64_t before = testing::HeapAllocationsOnThisThread();
    EXPECT_TRUE(GenerateCached(model, std::vector<uint32_t>{1}, request, rng, ReferenceEngine()));
    return testing::HeapAllocationsOnThisThread() - before;
  };
  EXPECT_EQ(allocations_for(8), allocations_for(40));
}

// A chat model's end-of-generation set: any of its ids ends the run as EOS
// does, in both loops, and each is checked against the vocabulary first.
TEST(GenerationScenarioTest, AnyEndOfGenerationIdStopsTheRun) {
  SplitMix64 model_rng(36);
  const DecoderModel model = *DecoderModel::FromSeed(ModelConfig::Create(5, 4, 2, 4, 1, 64, 1e4, 1e-6), model_rng);
  GenerationConfig request;
  request.mode = SamplingMode::TemperatureTopK(1.5, 5);
  request.max_new_tokens = 24;
  const std::vector<uint32_t> prompt = {1, 3};
  SplitMix64 free_rng(9);
  const GenerationResult free_run = *GenerateCached(model, prompt, request, free_rng, ReferenceEngine());
  ASSERT_EQ(free_run.stop, GenerationStop::kTokenLimit);
  // End at the first token that differs from the first one generated.
  size_t end_at = 1;
  while (end_at < free_run.generated.size() && free_run.generated[end_at] == free_run.generated[0]) ++end_at;
  ASSERT_LT(end_at, free_run.generated.size());
  // A second id that the run never reaches before `end_at`.
  uint32_t other = 0;
  while (other == free_run.generated[0] || other == free_run.generated[end_at]) ++other;
  request.end_of_generation = {other, free_run.generated[end_at]};
  for (const bool cached : {true, false}) {
    SplitMix64 rng(9);
    Result<GenerationResult> run = cached ? GenerateCached(model, prompt, request, rng, ReferenceEngine())
                                          : GenerateUncached(model, prompt, request, rng, ReferenceEngine());
    ASSERT_TRUE(run) << run.error().Debug();
    EXPECT_EQ(run->stop, GenerationStop::kEos);
    EXPECT_EQ(run->generated, std::vector<uint32_t>(free_run.generated.begin(),
                                                    free_run.generated.begin() + end_at + 1));
  }
  EXPECT_TRUE(request.Ends(other));
  EXPECT_FALSE(request.Ends(free_run.generated[0]));
  request.end_of_generation.push_back(5);
  SplitMix64 rng(9);
  Result<GenerationResult> refused = GenerateCached(model, prompt, request, rng, ReferenceEngine());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().Debug(), "EosTokenOutOfBounds { token_id: 5, vocabulary_size: 5 }");
  EXPECT_EQ(rng.state(), 9u) << "refused before drawing";
}

}  // namespace
}  // namespace kvrt
