// --batch-variant: the opt-in faster prefill attention of generate, logits and
// batch. Off by default; on, the logits move within the f32 tolerance but never
// with --threads; with the reference backend it is a usage error.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "test_support.h"

namespace kvrt {
namespace {

using testing::RunKvrt;

using testing::kDemoPrompt;
using testing::RunLogits;
const std::string kDemo = testing::DemoModel();

TEST(CliBatchVariantTest, MovesTheLogitsWithinToleranceButNotWithThreads) {
  const std::vector<double> invariant = RunLogits({"logits", "--model", kDemo, "--tokens", kDemoPrompt, "--json"});
  const std::vector<double> variant =
      RunLogits({"logits", "--model", kDemo, "--tokens", kDemoPrompt, "--json", "--batch-variant", "--threads", "1"});
  ASSERT_EQ(variant.size(), invariant.size());
  ASSERT_FALSE(variant.empty());
  double worst = 0;
  for (size_t i = 0; i < variant.size(); ++i) worst = std::max(worst, std::fabs(variant[i] - invariant[i]));
  EXPECT_LE(worst, 1e-4);
  EXPECT_NE(variant, invariant) << "--batch-variant did not reach the engine";
  for (const char* threads : {"2", "3"}) {
    EXPECT_EQ(RunLogits({"logits", "--model", kDemo, "--tokens", kDemoPrompt, "--json", "--batch-variant", "--threads",
                      threads}),
              variant)
        << threads;
  }
}

TEST(CliBatchVariantTest, GenerateAndBatchTakeTheFlag) {
  const testing::CliRun generated = RunKvrt(
      {"generate", "--model", kDemo, "--tokens", kDemoPrompt, "--max-new-tokens", "4", "--json", "--batch-variant"});
  EXPECT_EQ(generated.status, 0) << generated.err;
  for (const char* command : {"generate", "logits", "batch"}) {
    const testing::CliRun help = RunKvrt({command, "--help"});
    EXPECT_NE((help.out + help.err).find("--batch-variant"), std::string::npos) << command;
  }
}

TEST(CliBatchVariantTest, TheReferenceBackendRejectsIt) {
  const testing::CliRun run =
      RunKvrt({"logits", "--model", kDemo, "--tokens", "1,2", "--backend", "reference", "--batch-variant"});
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("error: InvalidArgument: "), std::string::npos) << run.err;
}

}  // namespace
}  // namespace kvrt
