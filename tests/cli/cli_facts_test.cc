// The facts a user needs next to every output: which build and SIMD target on how
// many threads (--version, every --json, generate's statistics), why a generation
// stopped, and the defaults that used to surprise (--temperature 0 is greedy, as
// in the C API; a byte-BPE model stops at its own EOS).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>
#include <string>
#include <vector>

#include "cli_runner.h"

namespace kvrt {
namespace {

using Json = nlohmann::json;
using testing::CliRun;
using testing::FixturePath;
using testing::RunKvrt;

// The allocator the CLI names: mimalloc, unless the build keeps libc's (a
// sanitizer brings an allocator of its own; -DKVRT_MIMALLOC=OFF).
#if KVRT_CLI_MIMALLOC
const std::string kAllocator = R"(mimalloc \d+\.\d+\.\d+)";
#else
const std::string kAllocator = "libc";
#endif

Json ParsedJson(const std::vector<std::string>& args) {
  const CliRun run = RunKvrt(args);
  EXPECT_EQ(run.status, 0) << run.err;
  const Json out = Json::parse(run.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(out.is_discarded()) << run.out;
  return out;
}

void ExpectBuildFacts(const Json& out, size_t threads, const std::string& what) {
  ASSERT_TRUE(out.contains("kvrt")) << what;
  const Json& facts = out.at("kvrt");
  EXPECT_TRUE(std::regex_match(facts.at("version").get<std::string>(), std::regex(R"(\d+\.\d+\.\d+)"))) << what;
  EXPECT_FALSE(facts.at("commit").get<std::string>().empty()) << what;
  EXPECT_FALSE(facts.at("simd_target").get<std::string>().empty()) << what;
  if (threads != 0) {
    EXPECT_EQ(facts.at("threads").get<size_t>(), threads) << what;
  }
  EXPECT_GE(facts.at("threads").get<size_t>(), 1u) << what;
  EXPECT_TRUE(std::regex_match(facts.at("allocator").get<std::string>(), std::regex(kAllocator))) << what;
}

TEST(CliFactsTest, VersionNamesTheBuildTheSimdTargetTheThreadsAndTheAllocator) {
  const CliRun run = RunKvrt({"--version"});
  EXPECT_EQ(run.status, 0) << run.err;
  const std::regex line(R"(kvrt \d+\.\d+\.\d+ \(commit \S+, simd \S+, \d+ threads?, allocator )" + kAllocator +
                        R"(\)\n)");
  EXPECT_TRUE(std::regex_match(run.out, line)) << run.out;
}

TEST(CliFactsTest, EveryJsonOutputCarriesTheBuildFacts) {
  const std::string checkpoint = FixturePath("golden/p01_tiny_fixture.ckpt");
  const std::string llama2c = FixturePath("llama2c/gqa_untied.bin");
  ExpectBuildFacts(ParsedJson({"inspect", checkpoint, "--json"}), 0, "inspect llmcp35");
  ExpectBuildFacts(ParsedJson({"logits", "--model", checkpoint, "--tokens", "0", "--json", "--threads", "1"}), 1,
                   "logits");
  ExpectBuildFacts(ParsedJson({"logits", "--model", checkpoint, "--tokens", "0", "--json", "--backend", "reference"}),
                   1, "logits reference");
  ExpectBuildFacts(ParsedJson({"generate", "--model", checkpoint, "--tokens", "0", "--max-new-tokens", "2", "--json",
                               "--threads", "2"}),
                   2, "generate");
  // inspect --json once refused llama2.c files.
  const Json llama = ParsedJson({"inspect", llama2c, "--json"});
  ExpectBuildFacts(llama, 0, "inspect llama2c");
  EXPECT_EQ(llama.at("format"), "llama2c");
  EXPECT_GT(llama.at("config").at("vocabulary_size").get<size_t>(), 0u);
  EXPECT_FALSE(llama.at("parameters").empty());
}

TEST(CliFactsTest, GenerateStatisticsNameTheBuildAndTheStopReason) {
  const CliRun run = RunKvrt({"generate", "--model", FixturePath("golden/p01_tiny_fixture.ckpt"), "--tokens", "0",
                              "--max-new-tokens", "2", "--threads", "1"});
  ASSERT_EQ(run.status, 0) << run.err;
  const std::regex facts(R"(kvrt: load .*; kvrt \d+\.\d+\.\d+ \(commit \S+, simd \S+, 1 thread, allocator )" +
                         kAllocator + R"(\))");
  EXPECT_TRUE(std::regex_search(run.err, facts)) << run.err;
  EXPECT_NE(run.err.find("kvrt: stop: token-limit after 2 generated tokens\n"), std::string::npos) << run.err;
}

TEST(CliFactsTest, TemperatureZeroIsGreedy) {
  const std::string model = FixturePath("demo/demo.ckpt");
  const std::vector<std::string> common = {"generate", "--model", model, "--prompt", "At dawn", "--max-new-tokens",
                                           "16", "--json", "--backend", "reference"};
  std::vector<std::string> greedy = common, zero = common, zero_with_k = common;
  greedy.push_back("--greedy");
  zero.insert(zero.end(), {"--temperature", "0"});
  zero_with_k.insert(zero_with_k.end(), {"--temperature", "0", "--top-k", "8"});
  const Json want = ParsedJson(greedy);
  EXPECT_EQ(ParsedJson(zero).at("generated"), want.at("generated"));
  EXPECT_EQ(ParsedJson(zero_with_k).at("generated"), want.at("generated"));
  EXPECT_TRUE(ParsedJson(zero).at("steps")[0].at("unit_draw").is_null());  // no draw: greedy
}

TEST(CliFactsTest, AByteBpeModelStopsAtItsOwnEosUnlessToldOtherwise) {
  // Greedy from token 12, this byte-BPE model (EOS 1) generates EOS as its 12th token.
  const std::vector<std::string> args = {"generate", "--model", FixturePath("golden/p09_medium_v512.ckpt"),
                                         "--tokens", "12", "--max-new-tokens", "60", "--json", "--backend",
                                         "reference"};
  const Json by_default = ParsedJson(args);
  EXPECT_EQ(by_default.at("stop"), "eos");
  ASSERT_EQ(by_default.at("generated").size(), 12u);
  EXPECT_EQ(by_default.at("generated").back(), 1);

  std::vector<std::string> no_eos = args;
  no_eos.push_back("--no-eos");
  const Json unbounded = ParsedJson(no_eos);
  EXPECT_NE(unbounded.at("stop"), "eos");
  EXPECT_GT(unbounded.at("generated").size(), 12u);

  std::vector<std::string> other_eos = args;
  other_eos.insert(other_eos.end(), {"--eos", "0"});
  EXPECT_NE(ParsedJson(other_eos).at("generated").size(), 12u);

  std::vector<std::string> both = args;
  both.insert(both.end(), {"--eos", "1", "--no-eos"});
  EXPECT_EQ(RunKvrt(both).status, 2);
}

TEST(CliFactsTest, MoreThreadsThanCoresRunWithoutATbbWarning) {
  // A pool of more threads than cores (oneTBB, the pool's former engine, capped
  // its workers and printed a multi-line warning): the run stays silent and exact.
  const std::string model = FixturePath("golden/p01_tiny_fixture.ckpt");
  const CliRun many = RunKvrt({"logits", "--model", model, "--tokens", "0,1,2", "--threads", "64", "--json"});
  EXPECT_EQ(many.status, 0) << many.err;
  EXPECT_EQ(many.err, "");
  const CliRun one = RunKvrt({"logits", "--model", model, "--tokens", "0,1,2", "--threads", "1", "--json"});
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_EQ(Json::parse(many.out).at("logits"), Json::parse(one.out).at("logits"));
  EXPECT_EQ(Json::parse(many.out).at("kvrt").at("threads"), 64);
}

}  // namespace
}  // namespace kvrt
