// The bundled demo model (fixtures/demo): its twelve recorded generations
// (golden.json) through both loops on the reference path: ids, every unit draw
// and interval, stop, final RNG state and the strictly decoded text.
#include <gtest/gtest.h>

#include "golden_case.h"
#include "formats/llmcp35/checkpoint.h"
#include "kvrt/generation.h"
#include "generate/generate.h"

namespace kvrt {
namespace {

using testing::BitsOf;
using testing::Json;

TEST(DemoModelTest, EveryRecordedGenerationIsReproducedBitForBit) {
  Result<Checkpoint> checkpoint = LoadCheckpoint(testing::FixturePath("demo/demo.ckpt"));
  ASSERT_TRUE(checkpoint) << checkpoint.error().message();
  Result<DecoderModel> model = checkpoint->BuildModel();
  ASSERT_TRUE(model);
  const Json golden = testing::LoadJson(testing::FixturePath("demo/golden.json"));
  ASSERT_EQ(golden.at("samples").size(), 12u);
  size_t index = 0;
  for (const Json& sample : golden.at("samples")) {
    if (!testing::CaseRunsInThisBuild(index++)) continue;
    const std::string label = sample.at("label").get<std::string>() + " / " +
                              sample.at("mode").at("kind").get<std::string>();
    const std::vector<uint32_t> prompt = testing::Ids(sample.at("prompt_ids"));
    if (sample.at("prompt_text").is_string() && sample.at("prompt_text") != "") {
      Result<std::vector<uint32_t>> encoded =
          checkpoint->tokenizer.EncodeContent(sample.at("prompt_text").get<std::string>());
      ASSERT_TRUE(encoded);
      if (prompt != std::vector<uint32_t>{0}) {
        EXPECT_EQ(*encoded, prompt) << label;
      }
    }
    GenerationConfig config;
    const Json& mode = sample.at("mode");
    config.mode = mode.at("kind") == "greedy"
                      ? SamplingMode::Greedy()
                      : SamplingMode::TemperatureTopK(
                            testing::DoubleFromHex(mode.at("temperature_bits").get<std::string>()),
                            mode.at("top_k").get<size_t>());
    config.eos_token = sample.at("eos_token_id").get<uint32_t>();
    config.max_new_tokens = sample.at("max_new_tokens").get<size_t>();
    const uint64_t start = std::stoull(sample.at("initial_rng_state").get<std::string>(), nullptr, 16);
    for (const bool cached : {true, false}) {
      SplitMix64 rng(start);
      Result<GenerationResult> run = cached ? GenerateCached(*model, prompt, config, rng, ReferenceEngine())
                                            : GenerateUncached(*model, prompt, config, rng, ReferenceEngine());
      ASSERT_TRUE(run) << label << ": " << run.error().message();
      EXPECT_EQ(run->generated, testing::Ids(sample.at("generated_ids"))) << label;
      EXPECT_EQ(rng.state(), std::stoull(sample.at("final_rng_state").get<std::string>(), nullptr, 16)) << label;
      const std::string stop = sample.at("stop");
      EXPECT_EQ(std::string(GenerationStopName(run->stop)), testing::GoldenStopName(stop)) << label;
      const Json& steps = sample.at("steps");
      ASSERT_EQ(run->steps.size(), steps.size()) << label;
      for (size_t i = 0; i < steps.size(); ++i) {
        EXPECT_EQ(run->steps[i].token_id, steps[i].at("token_id").get<uint32_t>()) << label;
        EXPECT_EQ(run->steps[i].prefix_length, steps[i].at("prefix_length").get<size_t>()) << label;
        if (steps[i].contains("unit_draw_bits") && !steps[i].at("unit_draw_bits").is_null()) {
          ASSERT_TRUE(run->steps[i].unit_draw) << label;
          EXPECT_EQ(BitsOf(*run->steps[i].unit_draw),
                    BitsOf(testing::DoubleFromHex(steps[i].at("unit_draw_bits").get<std::string>())))
              << label;
        }
        EXPECT_EQ(run->steps[i].interval_start, steps[i].at("interval_start").get<double>()) << label;
        EXPECT_EQ(run->steps[i].interval_end, steps[i].at("interval_end").get<double>()) << label;
      }
      std::vector<uint32_t> ids = run->generated;
      if (run->stop == GenerationStop::kEos) ids.pop_back();
      Result<std::string> text = checkpoint->tokenizer.DecodeContentUtf8(ids);
      if (sample.at("decoded_continuation_utf8").is_null()) {
        EXPECT_FALSE(text) << label;
      } else {
        ASSERT_TRUE(text) << label;
        EXPECT_EQ(*text, sample.at("decoded_continuation_utf8").get<std::string>()) << label;
      }
    }
  }
}

}  // namespace
}  // namespace kvrt
