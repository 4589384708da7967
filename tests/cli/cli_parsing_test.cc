// The CLI's argument parsing is strict: every word is either a known flag, its
// value, or a positional argument the command expects; numbers are plain decimal
// (RNG states plain hex). Each case below was once silently accepted and
// reinterpreted (`generate -n 5` ran 64 tokens before -n was llama.cpp's
// --max-new-tokens, " -1" became 2^64-1, "010" octal).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli_runner.h"

namespace kvrt {
namespace {

using testing::CliRun;
using testing::FixturePath;
using testing::RunKvrt;

const std::string& Model() {
  static const std::string path = FixturePath("golden/p01_tiny_fixture.ckpt");
  return path;
}

// Status 2, nothing on stdout, and exactly one `error: InvalidArgument: ...` line
// containing `needle`.
void ExpectUsageError(const std::vector<std::string>& args, const std::string& needle) {
  std::string shown;
  for (const std::string& arg : args) shown += "[" + arg + "] ";
  const CliRun run = RunKvrt(args);
  EXPECT_EQ(run.status, 2) << shown << run.out;
  EXPECT_EQ(run.out, "") << shown;
  EXPECT_EQ(run.err.rfind("error: InvalidArgument: ", 0), 0u) << shown << run.err;
  EXPECT_NE(run.err.find(needle), std::string::npos) << shown << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << shown << run.err;
}

std::vector<std::string> Generate(std::vector<std::string> extra) {
  std::vector<std::string> args = {"generate", "--model", Model(), "--tokens", "0", "--max-new-tokens", "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(CliParsingTest, StrayArgumentsAreRejected) {
  ExpectUsageError(Generate({"-x", "5"}), "unexpected argument '-x'");
  ExpectUsageError(Generate({"-n", "5"}), "flag --max-new-tokens given twice");  // -n is --max-new-tokens
  ExpectUsageError({"logits", "--model", Model(), "--tokens", "0", "-n", "5"}, "unexpected argument '-n'");
  ExpectUsageError({"generate", "extra", "--model", Model(), "--tokens", "0"}, "unexpected argument 'extra'");
  ExpectUsageError({"logits", "--model", Model(), "--tokens", "0", "more"}, "unexpected argument 'more'");
  ExpectUsageError({"inspect", Model(), Model()}, "unexpected argument");
  ExpectUsageError({"report", "now"}, "unexpected argument 'now'");
}

TEST(CliParsingTest, AFlagIsNotAnotherFlagsValue) {
  ExpectUsageError({"generate", "--model", "--tokens", "1"}, "flag --model needs a value");
  ExpectUsageError({"logits", "--tokens", "0", "--model"}, "flag --model needs a value");
}

TEST(CliParsingTest, NumbersAreDecimalOnly) {
  for (const char* bad : {" 5", "-1", " -1", "+5", "0x10", "5 ", "", "1e3", "18446744073709551616"}) {
    ExpectUsageError(Generate({"--seed", bad}), "--seed");
  }
  ExpectUsageError(Generate({"--threads", "-1"}), "--threads");
  // "010" is ten, not octal eight: the token budget is honoured exactly (on a
  // synthesized model whose context holds more than ten tokens).
  testing::ScratchDir scratch;
  const std::string model = scratch.File("context32.ckpt");
  ASSERT_EQ(RunKvrt({"synth", "--dim", "8", "--layers", "1", "--heads", "1", "--ffn", "8", "--vocab", "8",
                     "--seq-len", "32", "--llmcp35", model})
                .status,
            0);
  const CliRun run = RunKvrt({"generate", "--model", model, "--tokens", "0", "--max-new-tokens", "010",
                              "--backend", "reference", "--json"});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("\"stop\":\"token-limit\""), std::string::npos) << run.out;
  size_t steps = 0;
  for (size_t at = 0; (at = run.out.find("\"prefix_length\"", at)) != std::string::npos; ++at) ++steps;
  EXPECT_EQ(steps, 10u) << run.out;
  for (const char* bad : {" 0.5", "+0.5", "0.5x", "", "0x1p-1"}) {
    ExpectUsageError(Generate({"--temperature", bad, "--top-k", "2"}), "--temperature");
  }
}

TEST(CliParsingTest, RngStatesAreOneToSixteenHexDigits) {
  for (const char* bad : {"-1", "0x0x1", "0x", "", " 1", "+1", "1ffffffffffffffff", "0x1ffffffffffffffff", "12g"}) {
    ExpectUsageError(Generate({"--rng-state", bad}), "--rng-state");
  }
  for (const char* good : {"0x1", "0XdeadBEEF", "d8919406d6e024ac", "0xd8919406d6e024ac", "0"}) {
    const CliRun run = RunKvrt(Generate({"--rng-state", good, "--backend", "reference"}));
    EXPECT_EQ(run.status, 0) << good << run.err;
  }
}

TEST(CliParsingTest, TokenListsHaveNoEmptyItems) {
  for (const char* bad : {"1,2,", "1,,2", ",1", ",", "", "1, 2", "-1", "4294967296"}) {
    ExpectUsageError({"logits", "--model", Model(), "--tokens", bad}, "--tokens");
  }
}

TEST(CliParsingTest, NoCommandPrintsUsageOnStderrAndExitsTwo) {
  const CliRun run = RunKvrt({});
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.out, "");
  EXPECT_NE(run.err.find("Usage: kvrt"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("error: InvalidArgument: no command given\n"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace kvrt
