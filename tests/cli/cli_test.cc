// The kvrt CLI as users and the golden checker drive it: exact report, bit-exact
// logits and generation JSON on every public golden case, the reference's variant
// names for corrupt checkpoints, and the error contract.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "cli_runner.h"
#include "golden_case.h"

namespace kvrt {
namespace {

using testing::BitsOf;
using testing::F64;
using testing::F64Vector;
using testing::FixturePath;
using testing::Ids;
using testing::Json;

using testing::CliRun;

CliRun Kvrt(const std::vector<std::string>& args) { return testing::RunKvrt(args); }

std::string Join(const std::vector<uint32_t>& ids) { return testing::JoinIds(ids); }

TEST(CliTest, ReportIsByteIdenticalToTheChapter) {
  const CliRun run = Kvrt({"report"});
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, testing::ReadText(FixturePath("ch38/expected-report.txt")));
}

TEST(CliTest, LogitsAreBitExactOnEveryGoldenPrefix) {
  size_t prefixes = 0, checked = 0;
  for (const std::string& path : testing::GoldenCasePaths()) {
    const Json golden = testing::LoadJson(path);
    const std::string model =
        FixturePath("golden/" + golden.at("checkpoint").at("file").get<std::string>());
    for (const Json& prompt : golden.at("prompts")) {
      std::vector<uint32_t> tokens = Ids(prompt.at("prompt"));
      const std::vector<uint32_t> continuation = Ids(prompt.at("continuation"));
      for (size_t k = 0; k <= continuation.size(); ++k) {
        const bool runs = testing::CaseRunsInThisBuild(prefixes++);
        const std::vector<double> expected = F64Vector(prompt.at("full_forward")[k].at("logits"));
        for (const bool uncached : {true, false}) {
          if (!runs) break;
          std::vector<std::string> args = {"logits",     "--model",   model,       "--tokens",
                                           Join(tokens), "--backend", "reference", "--json"};
          if (uncached) args.push_back("--uncached");
          const CliRun run = Kvrt(args);
          ASSERT_EQ(run.status, 0) << run.err;
          const Json out = Json::parse(run.out);
          EXPECT_EQ(Ids(out.at("tokens")), tokens);
          const std::vector<double> logits = out.at("logits").get<std::vector<double>>();
          ASSERT_EQ(logits.size(), expected.size());
          for (size_t i = 0; i < logits.size(); ++i)
            ASSERT_EQ(BitsOf(logits[i]), BitsOf(expected[i])) << path;
          ++checked;
        }
        if (k < continuation.size()) tokens.push_back(continuation[k]);
      }
    }
  }
  EXPECT_EQ(prefixes, 164u);
  EXPECT_EQ(checked, 2 * ((164u + testing::kSanitizerCaseStride - 1) / testing::kSanitizerCaseStride));
}

TEST(CliTest, GenerateJsonMatchesBothLoopsOnEveryGoldenRequest) {
  size_t requests = 0;
  for (const std::string& path : testing::GoldenCasePaths()) {
    const Json golden = testing::LoadJson(path);
    const std::string model =
        FixturePath("golden/" + golden.at("checkpoint").at("file").get<std::string>());
    for (const Json& request : golden.at("generation")) {
      if (!testing::CaseRunsInThisBuild(requests++)) continue;
      for (const bool uncached : {false, true}) {
        std::vector<std::string> args = {"generate",
                                         "--model",
                                         model,
                                         "--tokens",
                                         Join(Ids(request.at("prompt"))),
                                         "--max-new-tokens",
                                         std::to_string(request.at("max_new_tokens").get<size_t>()),
                                         "--rng-state",
                                         request.at("rng_state").get<std::string>(),
                                         "--json",
                                         "--backend",
                                         "reference"};
        const Json& mode = request.at("mode");
        if (mode.at("kind") == "Greedy") {
          args.push_back("--greedy");
        } else {
          char temperature[40];
          std::snprintf(temperature, sizeof temperature, "%.17g", F64(mode.at("temperature")));
          args.insert(args.end(), {"--temperature", temperature, "--top-k",
                                   std::to_string(mode.at("top_k").get<size_t>())});
        }
        if (!request.at("eos_token").is_null())
          args.insert(args.end(),
                      {"--eos", std::to_string(request.at("eos_token").get<uint32_t>())});
        if (uncached) args.push_back("--uncached");
        const CliRun run = Kvrt(args);
        ASSERT_EQ(run.status, 0) << run.err;
        const Json out = Json::parse(run.out);
        const Json& expected = request.at(uncached ? "uncached" : "cached");
        const std::string what = path + " " + request.at("name").get<std::string>() +
                                 (uncached ? " uncached" : " cached");
        EXPECT_EQ(Ids(out.at("generated")), Ids(expected.at("generated"))) << what;
        EXPECT_EQ(out.at("stop").get<std::string>(), testing::GoldenStopName(expected.at("stop")))
            << what;
        EXPECT_EQ(out.at("final_rng_state").get<std::string>(),
                  expected.at("final_rng_state").get<std::string>())
            << what;
        if (!uncached) {
          EXPECT_EQ(out.at("final_cache_len"), expected.at("final_cache_len")) << what;
        }
        ASSERT_EQ(out.at("steps").size(), expected.at("steps").size()) << what;
        for (size_t i = 0; i < out.at("steps").size(); ++i) {
          const Json& got = out.at("steps")[i];
          const Json& want = expected.at("steps")[i];
          EXPECT_EQ(got.at("token_id"), want.at("token_id")) << what;
          EXPECT_EQ(got.at("prefix_length"), want.at("prefix_length")) << what;
          EXPECT_EQ(got.at("unit_draw").is_null(), want.at("unit_draw").is_null()) << what;
          if (!want.at("unit_draw").is_null()) {
            EXPECT_EQ(BitsOf(got.at("unit_draw").get<double>()), BitsOf(F64(want.at("unit_draw"))))
                << what;
          }
          EXPECT_EQ(BitsOf(got.at("interval_start").get<double>()),
                    BitsOf(F64(want.at("interval_start"))))
              << what;
          EXPECT_EQ(BitsOf(got.at("interval_end").get<double>()),
                    BitsOf(F64(want.at("interval_end"))))
              << what;
        }
      }
    }
  }
}

TEST(CliTest, InspectReportsTheReferenceVariantForEveryCorruptFile) {
  std::istringstream verdicts(testing::ReadText(FixturePath("corrupt/verdicts.tsv")));
  size_t checked = 0;
  for (std::string line; std::getline(verdicts, line);) {
    std::vector<std::string> columns;
    std::istringstream fields(line);
    for (std::string column; std::getline(fields, column, '\t');) columns.push_back(column);
    const CliRun run = Kvrt({"inspect", FixturePath("corrupt/" + columns[0])});
    if (columns[1] == "OK") {
      EXPECT_EQ(run.status, 0) << columns[0] << run.err;
    } else {
      const std::string variant = columns[2].substr(0, columns[2].find_first_of(" ({"));
      EXPECT_EQ(run.status, 2) << columns[0];
      EXPECT_EQ(run.out, "") << columns[0];
      EXPECT_EQ(run.err, "error: " + variant + ": " + columns[3] + "\n") << columns[0];
    }
    ++checked;
  }
  EXPECT_EQ(checked, 51u);
}

TEST(CliTest, ErrorsAreOneLineWithStatusTwo) {
  const std::string model = FixturePath("golden/p01_tiny_fixture.ckpt");
  struct Case {
    std::vector<std::string> args;
    std::string expected_prefix;
  };
  const std::vector<Case> cases = {
      {{"logits", "--model", model, "--tokens", "0,9", "--uncached"},
       "error: Embedding: token embedding"},
      {{"logits", "--model", model, "--tokens", "0,9"},
       "error: PromptTokenOutOfBounds: cached prefill token 9"},
      {{"generate", "--model", model, "--tokens", "0", "--temperature", "-1", "--top-k", "2"},
       "error: Sampling: sampling temperature must be finite and positive"},
      {{"generate", "--model", model, "--tokens", "0", "--eos", "5"},
       "error: EosTokenOutOfBounds: cached generation EOS"},
      {{"logits", "--model", model, "--tokens", "0", "--bogus"},
       "error: InvalidArgument: unknown flag --bogus"},
      {{"logits", "--model", "/nonexistent.ckpt", "--tokens", "0"}, "error: Io: "},
      {{"frobnicate"}, "error: InvalidArgument: unknown command"},
  };
  for (const Case& c : cases) {
    const CliRun run = Kvrt(c.args);
    EXPECT_EQ(run.status, 2) << c.expected_prefix;
    EXPECT_EQ(run.err.rfind(c.expected_prefix, 0), 0u) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  }
}

TEST(CliTest, EveryCommandHasHelp) {
  for (const char* command : {"inspect", "logits", "generate", "report"}) {
    const CliRun run = Kvrt({command, "--help"});
    EXPECT_EQ(run.status, 0) << command;
    EXPECT_NE(run.out.find("Usage: kvrt"), std::string::npos) << command;
  }
}

TEST(CliTest, GeneratesTheDemoModelsText) {
  const CliRun run = Kvrt({"generate", "--model", FixturePath("demo/demo.ckpt"), "--prompt",
                           "At dawn", "--temperature", "0.8", "--top-k", "8", "--eos", "1",
                           "--max-new-tokens", "64", "--backend", "reference"});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out,
            "At dawn, Mira carries a blue notebook to the river. She writes down the wind "
            "direction, counts thre\n");
}

}  // namespace
}  // namespace kvrt
