// The opt-in rounded activations of generate, logits and batch: --int8-activations on
// q8_0/q4_0 weights and --bf16-activations on bf16 weights. Off by default; on, the
// logits move off the f32-activation ones (but not with --threads), the engine's stderr
// line says how many matrices use them, and outside the fast f32 engine it is
// UnsupportedBackend.
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

struct OptIn {
  const char* flag;
  std::vector<const char*> weights;  // formats whose matrices it reaches
  double worst;                      // largest logit move expected (the demo's logits span about 30)
  const char* engine_line;           // with --weights weights[0] on the demo
};

const OptIn kOptIns[] = {
    // 15 matrices: the two FFN down projections (K = 172) fall back to f16.
    {"--int8-activations", {"q8_0", "q4_0"}, 0.5, "int8 activations on 13 quantized matrices"},
    {"--bf16-activations", {"bf16"}, 0.2, "bf16 activations on 15 bf16 matrices"},
};

class CliActivationsTest : public ::testing::TestWithParam<OptIn> {};
INSTANTIATE_TEST_SUITE_P(OptIns, CliActivationsTest, ::testing::ValuesIn(kOptIns),
                         [](const auto& param_info) { return std::string(param_info.param.flag + 2).substr(0, 4); });

TEST_P(CliActivationsTest, MovesTheLogitsButNotWithThreads) {
  const OptIn& opt_in = GetParam();
  for (const char* weights : opt_in.weights) {
    const std::vector<double> exact =
        RunLogits({"logits", "--model", kDemo, "--tokens", kDemoPrompt, "--json", "--weights", weights});
    const std::vector<double> rounded = RunLogits({"logits", "--model", kDemo, "--tokens", kDemoPrompt, "--json",
                                                "--weights", weights, opt_in.flag, "--threads", "1"});
    ASSERT_EQ(rounded.size(), exact.size());
    ASSERT_FALSE(rounded.empty());
    EXPECT_NE(rounded, exact) << weights << ": " << opt_in.flag << " did not reach the engine";
    double worst = 0;
    for (size_t i = 0; i < rounded.size(); ++i) worst = std::max(worst, std::fabs(rounded[i] - exact[i]));
    EXPECT_LE(worst, opt_in.worst) << weights;
    EXPECT_EQ(RunLogits({"logits", "--model", kDemo, "--tokens", kDemoPrompt, "--json", "--weights", weights, opt_in.flag,
                      "--threads", "2"}),
              rounded)
        << weights;
  }
}

TEST_P(CliActivationsTest, TheEngineLineCountsTheMatrices) {
  const OptIn& opt_in = GetParam();
  const testing::CliRun run = RunKvrt({"generate", "--model", kDemo, "--tokens", kDemoPrompt, "--max-new-tokens", "2",
                                       "--weights", opt_in.weights.front(), opt_in.flag});
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find(opt_in.engine_line), std::string::npos) << run.err;
  for (const char* command : {"generate", "logits", "batch", "chat"}) {
    const testing::CliRun help = RunKvrt({command, "--help"});
    EXPECT_NE((help.out + help.err).find(opt_in.flag), std::string::npos) << command;
  }
}

TEST_P(CliActivationsTest, OutsideTheFastF32EngineIsUnsupportedBackend) {
  for (std::vector<std::string> engine : {std::vector<std::string>{"--backend", "reference"},
                                          std::vector<std::string>{"--precision", "f64"}}) {
    std::vector<std::string> args = {"logits", "--model", kDemo, "--tokens", "1,2", GetParam().flag};
    args.insert(args.end(), engine.begin(), engine.end());
    const testing::CliRun run = RunKvrt(args);
    EXPECT_NE(run.status, 0);
    EXPECT_NE(run.err.find("error: UnsupportedBackend: "), std::string::npos) << run.err;
  }
}

}  // namespace
}  // namespace kvrt
