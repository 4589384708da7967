// The CLI on llama2.c files: `kvrt synth` reproduces the fixture byte for byte
// and writes loadable LLMCP35 checkpoints, `kvrt generate` streams run.c's text
// with its statistics on stderr, `kvrt logits` reads llama2.c models too, and bad
// files end in one typed error line.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "formats/llmcp35/checkpoint.h"
#include "formats/llama2c/llama2c.h"
#include "cli_runner.h"
#include "llama2c_test_support.h"

namespace kvrt {
namespace {

using Json = nlohmann::json;
using testing::RunCRecord;
using testing::ScratchDir;

using testing::CliRun;
using testing::JoinIds;

// The CLI with the scratch directory only used for the files the test writes.
CliRun Kvrt(const ScratchDir&, const std::vector<std::string>& args) { return testing::RunKvrt(args); }

TEST(Llama2cCliTest, SynthReproducesTheFixtureByteForByte) {
  ScratchDir dir;
  const CliRun run = Kvrt(dir, {"synth", "--dim", "32", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--ffn",
                                "96", "--vocab", "512", "--seq-len", "64", "--untied", "--seed", "2024", "--llama2c",
                                dir.File("model.bin"), "--tokenizer", dir.File("tokenizer.bin")});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(testing::ReadBytes(dir.File("model.bin")), testing::ReadBytes(RunCRecord().model_path));
  EXPECT_EQ(testing::ReadBytes(dir.File("tokenizer.bin")), testing::ReadBytes(RunCRecord().tokenizer_path));
}

TEST(Llama2cCliTest, SynthNamedShapesWithOverrides) {
  ScratchDir dir;
  // The 15M shape with one layer, a small vocabulary and context, to stay quick.
  const CliRun run = Kvrt(dir, {"synth", "--shape", "15M", "--layers", "1", "--vocab", "300", "--seq-len", "16",
                                "--llama2c", dir.File("m.bin")});
  ASSERT_EQ(run.status, 0) << run.err;
  Result<DecoderModel> model = LoadLlama2cModel(dir.File("m.bin"));
  ASSERT_TRUE(model) << model.error().Debug();
  EXPECT_EQ(model->config().model_width, 288u);
  EXPECT_EQ(model->config().heads, 6u);
  EXPECT_EQ(model->config().feed_forward_width, 768u);
  EXPECT_EQ(model->config().layers, 1u);
  EXPECT_TRUE(model->config().tied_output);

  EXPECT_EQ(Kvrt(dir, {"synth", "--shape", "7B", "--llama2c", dir.File("x.bin")}).status, 2);
  const CliRun untied = Kvrt(dir, {"synth", "--shape", "15M", "--untied", "--llmcp35", dir.File("x.ckpt")});
  EXPECT_EQ(untied.status, 2);
  EXPECT_EQ(untied.err.rfind("error: InvalidArgument: ", 0), 0u) << untied.err;
}

TEST(Llama2cCliTest, SynthWritesTheSameModelAsAnLlmcp35Checkpoint) {
  ScratchDir dir;
  const CliRun run = Kvrt(dir, {"synth", "--dim", "16", "--layers", "2", "--heads", "2", "--ffn", "24", "--vocab",
                                "40", "--seq-len", "8", "--seed", "5", "--llmcp35", dir.File("m.ckpt"), "--llama2c",
                                dir.File("m.bin")});
  ASSERT_EQ(run.status, 0) << run.err;
  Result<Checkpoint> checkpoint = LoadCheckpoint(dir.File("m.ckpt"));
  ASSERT_TRUE(checkpoint) << checkpoint.error().Debug();
  EXPECT_EQ(checkpoint->tokenizer.kind(), TokenizerKind::kLiteral);
  EXPECT_EQ(checkpoint->tokenizer.pieces()[39], "39");
  EXPECT_EQ(checkpoint->selected_step, 0u);
  EXPECT_EQ(checkpoint->optimizer.config.learning_rate, 1e-300);
  // The seeded f64 values; the llama2.c file holds them rounded to f32.
  SplitMix64 rng(5);
  Result<DecoderModel> seeded = DecoderModel::FromSeed(checkpoint->config, rng);
  Result<DecoderModel> f32 = LoadLlama2cModel(dir.File("m.bin"));
  ASSERT_TRUE(seeded && f32);
  for (size_t i = 0; i < seeded->parameters().size(); ++i) {
    const std::span<const double> values = seeded->parameter(i).values();
    EXPECT_TRUE(std::equal(values.begin(), values.end(), checkpoint->parameters[i].values.begin()));
    std::vector<double> rounded(values.size());
    f32->parameter(i).ReadValues(rounded);
    for (size_t j = 0; j < values.size(); ++j) {
      ASSERT_EQ(rounded[j], static_cast<double>(static_cast<float>(values[j])));
    }
  }
  const CliRun generate = Kvrt(dir, {"generate", "--model", dir.File("m.ckpt"), "--tokens", "1,2", "--backend",
                                     "reference", "--max-new-tokens", "4"});
  EXPECT_EQ(generate.status, 0) << generate.err;
}

TEST(Llama2cCliTest, GenerateStreamsRunCsTextAndReportsStatistics) {
  ScratchDir dir;
  const RunCRecord runc = RunCRecord::Load();
  const CliRun json = Kvrt(dir, {"generate", "--model", runc.model_path, "--tokenizer", runc.tokenizer_path,
                                 "--prompt", RunCRecord::kPrompt, "--max-new-tokens", "40", "--json"});
  ASSERT_EQ(json.status, 0) << json.err;
  const Json out = Json::parse(json.out);
  std::vector<uint32_t> sequence = out.at("prompt").get<std::vector<uint32_t>>();
  for (uint32_t id : out.at("generated").get<std::vector<uint32_t>>()) sequence.push_back(id);
  EXPECT_EQ(sequence, runc.tokens);
  for (const char* statistic : {"kvrt: load", "kv cache", "tokens/s (prefill)", "tokens/s (decode)"}) {
    EXPECT_NE(json.err.find(statistic), std::string::npos) << json.err;
  }

  const CliRun text = Kvrt(dir, {"generate", "--model", runc.model_path, "--tokenizer", runc.tokenizer_path,
                                 "--prompt", RunCRecord::kPrompt, "--max-new-tokens", "40"});
  ASSERT_EQ(text.status, 0) << text.err;
  // kvrt echoes the prompt, then streams the continuation; run.c printed the same
  // bytes less those that are not printable (it drops raw-byte tokens like ï's).
  auto printable = [](const std::string& bytes) {
    std::string kept;
    for (char c : bytes) {
      if (std::isprint(static_cast<unsigned char>(c)) || std::isspace(static_cast<unsigned char>(c))) kept += c;
    }
    return kept;
  };
  EXPECT_EQ(text.out.rfind(RunCRecord::kPrompt, 0), 0u);
  EXPECT_EQ(printable(text.out), testing::ReadText(testing::FixturePath("llama2c/runc_stdout.txt")));
}

TEST(Llama2cCliTest, LogitsReadsLlama2cModels) {
  ScratchDir dir;
  const RunCRecord runc = RunCRecord::Load();
  const std::vector<uint32_t> prefix(runc.tokens.begin(), runc.tokens.begin() + 5);
  const CliRun run = Kvrt(dir, {"logits", "--model", runc.model_path, "--tokens", JoinIds(prefix), "--json"});
  ASSERT_EQ(run.status, 0) << run.err;
  const std::vector<double> logits = Json::parse(run.out).at("logits").get<std::vector<double>>();
  ASSERT_EQ(logits.size(), RunCRecord::kVocabulary);
  for (size_t i = 0; i < logits.size(); ++i) EXPECT_NEAR(logits[i], runc.row(4)[i], 1e-4);
}

TEST(Llama2cCliTest, BadFilesEndInOneTypedErrorLine) {
  ScratchDir dir;
  const RunCRecord runc = RunCRecord::Load();
  std::vector<uint8_t> bytes = testing::ReadBytes(runc.model_path);
  testing::WriteBytes(dir.File("cut.bin"), std::vector<uint8_t>(bytes.begin(), bytes.begin() + 1000));
  std::vector<uint8_t> inconsistent = bytes;
  inconsistent[16] = 3;  // n_kv_heads 3 does not divide 4 heads
  testing::WriteBytes(dir.File("inconsistent.bin"), inconsistent);
  testing::WriteBytes(dir.File("tokenizer.bin"), {16, 0, 0, 0});
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"generate", "--model", dir.File("cut.bin"), "--tokens", "1"}, "error: Truncated: "},
      {{"logits", "--model", dir.File("inconsistent.bin"), "--tokens", "1"}, "error: InconsistentHeader: "},
      {{"generate", "--model", runc.model_path, "--tokenizer", dir.File("tokenizer.bin"), "--prompt", "x"},
       "error: MissingByteTokens: "},
      {{"generate", "--model", runc.model_path, "--prompt", "x"}, "error: InvalidArgument: "},
  };
  for (const auto& [args, prefix] : cases) {
    const CliRun run = Kvrt(dir, args);
    EXPECT_EQ(run.status, 2) << prefix;
    EXPECT_EQ(run.err.rfind(prefix, 0), 0u) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  }
}

}  // namespace
}  // namespace kvrt
