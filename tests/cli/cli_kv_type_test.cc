// --kv-type and llama.cpp's -ctk/-ctv: the fast f16, bf16 and q8_0 caches within their
// derived bound of their oracle (--backend reference --kv-type T) on the GGUF fixtures, the spellings
// agreeing bit for bit, and one clear error line for every combination kvrt
// cannot run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "test_support.h"

namespace kvrt {
namespace {

using testing::CliRun;
using testing::RunKvrt;
using testing::RunLogits;

std::string Modern(const std::string& name) { return testing::FixturePath("gguf/modern/" + name); }

double MaxAbsDiff(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

void ExpectOneErrorLine(const CliRun& run, const std::string& name) {
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err.rfind("error: " + name + ": ", 0), 0u) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
}

constexpr const char* kTokens = "1,15,27,3,99,41,8,250,12,7,63,5,19,33,2,88,14";

TEST(KvTypeCliTest, FastCompactCachesAreWithinToleranceOfTheirOracleOnTheGgufFixtures) {
  for (const char* name : {"kq-f32.gguf", "qwen2-f32.gguf", "llama31-f32.gguf"}) {
    const std::string model = Modern(name);
    const std::vector<double> exact =
        RunLogits({"logits", "--model", model, "--tokens", kTokens, "--backend", "reference", "--json"});
    std::vector<double> previous_oracle;
    for (const std::string type : {"f16", "bf16", "q8_0"}) {
      const std::vector<double> fast =
          RunLogits({"logits", "--model", model, "--tokens", kTokens, "--kv-type", type, "--json"});
      const std::vector<double> oracle = RunLogits(
          {"logits", "--model", model, "--tokens", kTokens, "--backend", "reference", "--kv-type", type, "--json"});
      ASSERT_FALSE(fast.empty()) << name << " " << type;
      // kv_compact_types_test.cc derives the bound: the f32 tolerance plus twice the
      // logits' response to the rounding itself (f32 and f64 values can round to
      // neighbours).
      EXPECT_LE(MaxAbsDiff(fast, oracle), 1e-4 + 2 * MaxAbsDiff(oracle, exact)) << name << " " << type;
      std::printf("[ kv %s ] %s: fast - oracle %.3g, oracle - exact %.3g\n", type.c_str(), name,
                  MaxAbsDiff(fast, oracle), MaxAbsDiff(oracle, exact));
      EXPECT_NE(oracle, exact) << name << " " << type << ": the oracle must round";
      EXPECT_NE(oracle, previous_oracle) << name << " " << type << ": every type rounds its own way";
      previous_oracle = oracle;
    }
  }
}

TEST(KvTypeCliTest, LlamaCppSpellingsAreTheSameOption) {
  const std::string model = Modern("kq-f32.gguf");
  const std::vector<double> named =
      RunLogits({"logits", "--model", model, "--tokens", kTokens, "--kv-type", "f16", "--json"});
  EXPECT_EQ(RunLogits({"logits", "--model", model, "--tokens", kTokens, "-ctk", "f16", "-ctv", "f16", "--json"}),
            named);
  EXPECT_EQ(RunLogits({"logits", "--model", model, "--tokens", kTokens, "--cache-type-k", "f16", "--json"}), named);
  // f32 is the default cache of the fast engine.
  EXPECT_EQ(RunLogits({"logits", "--model", model, "--tokens", kTokens, "-ctk", "f32", "--json"}),
            RunLogits({"logits", "--model", model, "--tokens", kTokens, "--json"}));
}

TEST(KvTypeCliTest, WhatCannotRunIsOneErrorLine) {
  const std::string model = Modern("kq-f32.gguf");
  const std::vector<std::string> base = {"logits", "--model", model, "--tokens", "1,2,3"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return RunKvrt(args);
  };
  ExpectOneErrorLine(with({"-ctk", "f16", "-ctv", "f32"}), "InvalidArgument");
  ExpectOneErrorLine(with({"--kv-type", "f16", "--cache-type-v", "f32"}), "InvalidArgument");
  ExpectOneErrorLine(with({"--kv-type", "q4_1"}), "InvalidArgument");
  ExpectOneErrorLine(with({"--kv-type", "f64"}), "InvalidArgument");  // the fast f32 engine's precision is f32
  ExpectOneErrorLine(with({"--kv-type", "f16", "--uncached"}), "InvalidArgument");
  ExpectOneErrorLine(with({"--kv-type", "f16", "--batch-variant"}), "UnsupportedBackend");
  ExpectOneErrorLine(with({"--kv-type", "f16", "--precision", "f64"}), "UnsupportedBackend");
  ExpectOneErrorLine(with({"--kv-type", "bf16", "--batch-variant"}), "UnsupportedBackend");
  ExpectOneErrorLine(with({"-ctk", "bf16", "-ctv", "f16"}), "InvalidArgument");
  ExpectOneErrorLine(with({"--kv-type", "q8_0", "--batch-variant"}), "UnsupportedBackend");
  ExpectOneErrorLine(with({"-ctk", "q8_0", "-ctv", "f16"}), "InvalidArgument");
  EXPECT_EQ(with({"--backend", "reference", "--kv-type", "f64"}).status, 0);
}

TEST(KvTypeCliTest, GenerateReportsTheCacheItAllocated) {
  const std::string model = Modern("kq-f32.gguf");
  const CliRun f16 = RunKvrt({"generate", "--model", model, "--tokens", "1,2,3", "-n", "2", "--ctx-size", "64",
                              "--kv-type", "f16"});
  ASSERT_EQ(f16.status, 0) << f16.err;
  const CliRun f32 = RunKvrt({"generate", "--model", model, "--tokens", "1,2,3", "-n", "2", "--ctx-size", "64"});
  ASSERT_EQ(f32.status, 0) << f32.err;
  const auto cache_line = [](const std::string& err) {
    const size_t at = err.find("kvrt: kv cache ");
    return at == std::string::npos ? std::string() : err.substr(at, err.find('\n', at) - at);
  };
  EXPECT_NE(cache_line(f16.err).find(", f16)"), std::string::npos) << f16.err;
  EXPECT_NE(cache_line(f32.err).find(", f32)"), std::string::npos) << f32.err;
  const double f16_mib = std::stod(cache_line(f16.err).substr(15));
  const double f32_mib = std::stod(cache_line(f32.err).substr(15));
  EXPECT_NEAR(f16_mib * 2, f32_mib, 0.011);
  const CliRun bf16 = RunKvrt({"generate", "--model", model, "--tokens", "1,2,3", "-n", "2", "--ctx-size", "64",
                               "-ctk", "bf16", "-ctv", "bf16"});
  ASSERT_EQ(bf16.status, 0) << bf16.err;
  EXPECT_NE(cache_line(bf16.err).find(", bf16)"), std::string::npos) << bf16.err;
  EXPECT_EQ(cache_line(bf16.err).substr(15, 8), cache_line(f16.err).substr(15, 8));
  const CliRun q8 = RunKvrt({"generate", "--model", model, "--tokens", "1,2,3", "-n", "2", "--ctx-size", "64",
                             "-ctk", "q8_0", "-ctv", "q8_0"});
  ASSERT_EQ(q8.status, 0) << q8.err;
  EXPECT_NE(cache_line(q8.err).find(", q8_0)"), std::string::npos) << q8.err;
  EXPECT_LT(std::stod(cache_line(q8.err).substr(15)), f16_mib) << q8.err;
}

}  // namespace
}  // namespace kvrt
