// --max-rows-per-step: the fast engine's rows per step (its workspace size). A
// prompt longer than that is prefilled in chunks and committed once; with the
// batch-invariant kernels the logits are the same bits for every chunk size.
#include <gtest/gtest.h>

#include <string>

#include "cli_runner.h"
#include "test_support.h"

namespace kvrt {
namespace {

using testing::RunKvrt;

const std::string kDemo = testing::FixturePath("demo/demo.ckpt");
constexpr const char* kPrompt = "67,118,5,9,33,2,71,40,12";

TEST(CliMaxRowsTest, ChunkedPrefillGivesTheSameLogitsAsOneStep) {
  const testing::CliRun whole = RunKvrt({"logits", "--model", kDemo, "--tokens", kPrompt, "--json"});
  ASSERT_EQ(whole.status, 0) << whole.err;
  for (const char* rows : {"1", "2", "4", "512"}) {
    const testing::CliRun chunked =
        RunKvrt({"logits", "--model", kDemo, "--tokens", kPrompt, "--json", "--max-rows-per-step", rows});
    ASSERT_EQ(chunked.status, 0) << rows << ": " << chunked.err;
    EXPECT_EQ(chunked.out, whole.out) << rows;
  }
  const testing::CliRun generated = RunKvrt({"generate", "--model", kDemo, "--tokens", kPrompt, "--json",
                                             "--max-new-tokens", "6", "--max-rows-per-step", "3"});
  const testing::CliRun reference = RunKvrt({"generate", "--model", kDemo, "--tokens", kPrompt, "--json",
                                             "--max-new-tokens", "6"});
  ASSERT_EQ(generated.status, 0) << generated.err;
  EXPECT_EQ(generated.out, reference.out);
}

TEST(CliMaxRowsTest, ZeroOrNonNumbersAreTypedUsageErrors) {
  for (const char* bad : {"0", "-3", "many", ""}) {
    const testing::CliRun run =
        RunKvrt({"logits", "--model", kDemo, "--tokens", "1,2", "--max-rows-per-step", bad});
    EXPECT_EQ(run.status, 2) << bad;
    EXPECT_NE(run.err.find("error: InvalidArgument: "), std::string::npos) << bad << ": " << run.err;
  }
}

}  // namespace
}  // namespace kvrt
