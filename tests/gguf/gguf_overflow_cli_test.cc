// GGUF weights so large that an f32 activation's sum of squares overflows (issue
// 38): the fast f32 engine used to return all-zero logits with exit 0 (RMSNorm's
// Σx² became inf, its inverse 0), where the f64 engines give finite logits. The
// fast engine must compute them correctly or fail with a typed error; it may
// never succeed with other logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "formats/gguf/gguf_writer.h"
#include "model/decoder_model.h"
#include "test_support.h"

namespace kvrt {
namespace {

using testing::RunKvrt;

// A seeded f32 GGUF model whose parameter `slot` of block 0 holds `value` everywhere.
std::string WriteModelWith(const testing::ScratchDir& dir, BlockSlot slot, double value) {
  const ModelConfig config = ModelConfig::Create(48, 64, 4, 96, 2, 32, 10000.0, 1e-5);
  SplitMix64 rng(5);
  Result<DecoderModel> model = DecoderModel::FromSeed(config, rng);
  EXPECT_TRUE(model) << model.error().Debug();
  const size_t index = BlockParameterIndex(0, slot);
  ParameterUpdate update{index, std::vector<double>(model->parameter(index).element_count(), value)};
  EXPECT_TRUE(model->UpdateParameters(std::span(&update, 1)));
  const std::string path = dir.File("overflow.gguf");
  Result<void> saved = gguf::SaveGgufModel(*model, gguf::GgmlType::kF32, path);
  EXPECT_TRUE(saved) << saved.error().Debug();
  return path;
}

std::vector<double> Logits(const testing::CliRun& run) {
  return nlohmann::json::parse(run.out).at("logits").get<std::vector<double>>();
}

void ExpectFastMatchesReferenceOrFails(BlockSlot slot, double value) {
  const testing::ScratchDir dir;
  const std::string model = WriteModelWith(dir, slot, value);
  const std::vector<std::string> logits = {"logits", "--model", model, "--tokens", "1,2,3,4", "--json"};
  std::vector<std::string> reference_args = logits;
  reference_args.insert(reference_args.end(), {"--backend", "reference"});
  const testing::CliRun reference = RunKvrt(reference_args);
  ASSERT_EQ(reference.status, 0) << reference.err;
  const std::vector<double> expected = Logits(reference);
  double largest = 0.0;
  for (double x : expected) largest = std::max(largest, std::abs(x));
  ASSERT_GT(largest, 0.1) << "the reference logits should not be near zero";

  for (const char* precision : {"f32", "f64"}) {
    std::vector<std::string> args = logits;
    args.insert(args.end(), {"--precision", precision, "--threads", "2"});
    const testing::CliRun fast = RunKvrt(args);
    if (fast.status != 0) {  // a typed error is an honest answer
      EXPECT_EQ(fast.status, 2) << precision;
      EXPECT_EQ(fast.err.rfind("error: ", 0), 0u) << fast.err;
      continue;
    }
    const std::vector<double> actual = Logits(fast);
    ASSERT_EQ(actual.size(), expected.size());
    double worst = 0.0;
    for (size_t i = 0; i < actual.size(); ++i) worst = std::max(worst, std::abs(actual[i] - expected[i]));
    EXPECT_LE(worst, 1e-3 * largest) << precision << ": fast logits " << fast.out;
  }
}

TEST(GgufOverflowCli, HugeAttentionNormGainsGiveTheReferenceLogitsOrATypedError) {
  ExpectFastMatchesReferenceOrFails(BlockSlot::kAttentionNorm, 1e19);
}

TEST(GgufOverflowCli, HugeFeedForwardDownWeightsGiveTheReferenceLogitsOrATypedError) {
  ExpectFastMatchesReferenceOrFails(BlockSlot::kDown, 1e30);
}

}  // namespace
}  // namespace kvrt
