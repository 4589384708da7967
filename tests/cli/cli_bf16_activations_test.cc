// --bf16-activations: the opt-in bf16-activation kernels of generate, logits and
// batch on bf16 weights. Off by default; on, the logits move off the f32-activation
// ones (but not with --threads), the engine's stderr line says how many matrices use
// them, and outside the fast f32 engine it is UnsupportedBackend.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "test_support.h"

namespace kvrt {
namespace {

using testing::RunKvrt;

const std::string kDemo = testing::FixturePath("demo/demo.ckpt");
constexpr const char* kPrompt = "67,118,5,9,33,2,71,40,12,3,77,5,19,4,88,23,1,9";

std::vector<double> Logits(const std::vector<std::string>& args) { return testing::RunLogits(args); }

TEST(CliBf16ActivationsTest, MovesTheLogitsButNotWithThreads) {
  for (const char* weights : {"bf16"}) {
    const std::vector<double> exact =
        Logits({"logits", "--model", kDemo, "--tokens", kPrompt, "--json", "--weights", weights});
    const std::vector<double> bf16 = Logits({"logits", "--model", kDemo, "--tokens", kPrompt, "--json", "--weights",
                                             weights, "--bf16-activations", "--threads", "1"});
    ASSERT_EQ(bf16.size(), exact.size());
    ASSERT_FALSE(bf16.empty());
    EXPECT_NE(bf16, exact) << weights << ": --bf16-activations did not reach the engine";
    double worst = 0;
    for (size_t i = 0; i < bf16.size(); ++i) worst = std::max(worst, std::fabs(bf16[i] - exact[i]));
    EXPECT_LE(worst, 0.2) << weights;  // the demo's logits span about 30
    EXPECT_EQ(Logits({"logits", "--model", kDemo, "--tokens", kPrompt, "--json", "--weights", weights,
                      "--bf16-activations", "--threads", "2"}),
              bf16)
        << weights;
  }
}

TEST(CliBf16ActivationsTest, TheEngineLineCountsTheMatrices) {
  const testing::CliRun run = RunKvrt({"generate", "--model", kDemo, "--tokens", kPrompt, "--max-new-tokens", "2",
                                       "--weights", "bf16", "--bf16-activations"});
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("bf16 activations on 15 bf16 matrices"), std::string::npos) << run.err;
  for (const char* command : {"generate", "logits", "batch"}) {
    const testing::CliRun help = RunKvrt({command, "--help"});
    EXPECT_NE((help.out + help.err).find("--bf16-activations"), std::string::npos) << command;
  }
}

TEST(CliBf16ActivationsTest, OutsideTheFastF32EngineIsUnsupportedBackend) {
  for (std::vector<std::string> engine : {std::vector<std::string>{"--backend", "reference"},
                                          std::vector<std::string>{"--precision", "f64"}}) {
    std::vector<std::string> args = {"logits", "--model", kDemo, "--tokens", "1,2", "--bf16-activations"};
    args.insert(args.end(), engine.begin(), engine.end());
    const testing::CliRun run = RunKvrt(args);
    EXPECT_NE(run.status, 0);
    EXPECT_NE(run.err.find("error: UnsupportedBackend: "), std::string::npos) << run.err;
  }
}

}  // namespace
}  // namespace kvrt
