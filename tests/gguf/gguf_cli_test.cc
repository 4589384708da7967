// The GGUF contract of the CLI, as unseen files are checked: `kvrt tokenize`
// against llama.cpp's tokenizations, `kvrt logits` and `kvrt generate` against
// llama.cpp's logits and greedy tokens, `kvrt inspect` and `kvrt synth --gguf`.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "test_support.h"

namespace kvrt {
namespace {

using testing::RunKvrt;

std::string Ids(const std::vector<uint32_t>& ids) {
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) text += (i ? "," : "") + std::to_string(ids[i]);
  return text;
}

std::vector<uint32_t> TokenizeFile(const std::string& model, const std::string& text, bool bos) {
  // In this process's own directory: ctest runs the tests of this binary in parallel
  // processes, and another test run may share the machine's temporary directory (a
  // fixed name once let a second ctest truncate the prompt under this one).
  static const testing::ScratchDir scratch;
  const std::string path = scratch.File(std::string("tokenize_") +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".txt");
  std::ofstream(path, std::ios::binary) << text;
  std::vector<std::string> args = {"tokenize", "--model", model, "--file", path, "--json"};
  if (!bos) args.push_back("--no-bos");
  const testing::CliRun run = RunKvrt(args);
  EXPECT_EQ(run.status, 0) << run.err;
  if (run.status != 0) return {};
  return nlohmann::json::parse(run.out).at("tokens").get<std::vector<uint32_t>>();
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(GgufCliTest, TokenizeMatchesLlamaCppOnTheTinyModelPrompts) {
  const nlohmann::json cases = ReadJson(testing::FixturePath("gguf/tiny.tokenize.json"));
  ASSERT_EQ(cases.size(), 15u);
  for (const nlohmann::json& item : cases) {
    const std::string prompt = item.at("prompt").get<std::string>();
    EXPECT_EQ(TokenizeFile(testing::FixturePath("gguf/tiny-f32.gguf"), prompt, true),
              item.at("tokens").get<std::vector<uint32_t>>())
        << prompt;
  }
}

TEST(GgufCliTest, TokenizeMatchesTheOriginalTokenizersOnVocabularyOnlyFiles) {
  for (const char* vocabulary : {"gguf/vocab/ggml-vocab-llama-spm.gguf", "gguf/vocab/ggml-vocab-gpt-2.gguf"}) {
    const std::string path = testing::FixturePath(vocabulary);
    std::ifstream inp(path + ".inp", std::ios::binary), out(path + ".out");
    const std::string inputs((std::istreambuf_iterator<char>(inp)), std::istreambuf_iterator<char>());
    const std::string separator = "\n__ggml_vocab_test__\n";
    size_t start = 0, cases = 0, matches = 0;
    std::string line;
    for (size_t end; (end = inputs.find(separator, start)) != std::string::npos; start = end + separator.size()) {
      ASSERT_TRUE(std::getline(out, line));
      std::vector<uint32_t> want;
      std::istringstream ids(line);
      for (uint32_t id; ids >> id;) want.push_back(id);
      const std::string text = inputs.substr(start, end - start);
      if (testing::CaseRunsInThisBuild(cases++)) {
        const std::vector<uint32_t> got = TokenizeFile(path, text, false);
        EXPECT_EQ(got, want) << vocabulary << " test " << cases - 1;
        matches += got == want;
      }
    }
    EXPECT_EQ(cases, 46u);
    EXPECT_EQ(matches, (cases + testing::kSanitizerCaseStride - 1) / testing::kSanitizerCaseStride) << vocabulary;
  }
}

// llama.cpp keeps f32 activations only for f32 weights; the other files round
// activations first (fixtures/gguf README): these are its measured bounds.
double LlamaCppBound(const std::string& type) {
  if (type == "f32") return 1e-5;
  if (type == "f16") return 3e-3;
  if (type == "bf16") return 2e-2;
  return 6e-2;
}

TEST(GgufCliTest, LastLogitsAndGreedyTokensAgreeWithLlamaCpp) {
  for (const std::string type : {"f32", "f16", "bf16", "q8_0", "q4_0"}) {
    const std::string model = testing::FixturePath("gguf/tiny-" + type + ".gguf");
    const nlohmann::json expected = ReadJson(testing::FixturePath("gguf/tiny-" + type + ".logits.json"));
    const nlohmann::json& s1 = expected.at("sequences").at(0);
    const std::vector<uint32_t> tokens = s1.at("tokens").get<std::vector<uint32_t>>();
    const testing::CliRun logits = RunKvrt({"logits", "--model", model, "--tokens", Ids(tokens), "--json"});
    ASSERT_EQ(logits.status, 0) << logits.err;
    const std::vector<double> row = nlohmann::json::parse(logits.out).at("logits").get<std::vector<double>>();
    const std::vector<double> want = s1.at("logits_last").get<std::vector<double>>();
    ASSERT_EQ(row.size(), want.size());
    double worst = 0;
    for (size_t i = 0; i < row.size(); ++i) worst = std::max(worst, std::fabs(row[i] - want[i]));
    EXPECT_LE(worst, LlamaCppBound(type)) << type;

    // Greedy continuation: identical where llama.cpp's margin exceeds the bound
    // (f32: every token); compared step by step on llama.cpp's own prefix.
    const std::vector<uint32_t> greedy = s1.at("greedy").get<std::vector<uint32_t>>();
    const std::vector<double> margins = s1.at("greedy_margin").get<std::vector<double>>();
    const testing::CliRun run = RunKvrt({"generate", "--model", model, "--tokens", Ids(tokens), "--greedy",
                                         "--max-new-tokens", "24", "--json"});
    ASSERT_EQ(run.status, 0) << run.err;
    const std::vector<uint32_t> generated =
        nlohmann::json::parse(run.out).at("generated").get<std::vector<uint32_t>>();
    for (size_t i = 0; i < generated.size() && i < greedy.size(); ++i) {
      if (type != "f32" && margins[i] <= 2 * LlamaCppBound(type)) break;  // the paths may part here
      EXPECT_EQ(generated[i], greedy[i]) << type << " step " << i;
    }
    if (type == "f32") {
      EXPECT_EQ(generated, greedy);
    }
  }
}

TEST(GgufCliTest, InspectDescribesTheFileAndRejectsUnknownFormats) {
  const testing::CliRun json = RunKvrt({"inspect", testing::FixturePath("gguf/tiny-q4_0.gguf"), "--json"});
  ASSERT_EQ(json.status, 0) << json.err;
  const nlohmann::json summary = nlohmann::json::parse(json.out);
  EXPECT_EQ(summary.at("architecture"), "llama");
  EXPECT_EQ(summary.at("tensor_count"), 21);
  EXPECT_EQ(summary.at("tensors_per_type").at("Q4_0"), 15);
  EXPECT_EQ(summary.at("tensors_per_type").at("Q8_0"), 1);
  EXPECT_EQ(summary.at("config").at("kv_heads"), 2);
  EXPECT_EQ(summary.at("tokenizer").at("kind"), "sentencepiece");
  EXPECT_EQ(summary.at("context_length"), 128);

  const testing::ScratchDir scratch;
  const std::string text = scratch.File("not_a_model.txt");
  std::ofstream(text) << "hello, world\n";
  const testing::CliRun unknown = RunKvrt({"inspect", text});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_EQ(unknown.err.rfind("error: UnknownModelFormat: ", 0), 0u) << unknown.err;
  EXPECT_EQ(std::count(unknown.err.begin(), unknown.err.end(), '\n'), 1) << unknown.err;
  for (const char* format : {"LLMCP35", "GGUF", "llama2.c"}) {
    EXPECT_NE(unknown.err.find(format), std::string::npos) << unknown.err;
  }
}

TEST(GgufCliTest, SynthesizedFilesRunInEveryType) {
  const testing::ScratchDir scratch;
  for (const std::string type : {"f32", "f16", "bf16", "q8_0", "q4_0"}) {
    const std::string path = scratch.File("synth_" + type + ".gguf");
    const testing::CliRun synth = RunKvrt({"synth", "--dim", "64", "--layers", "2", "--heads", "4", "--kv-heads", "2",
                                           "--ffn", "96", "--vocab", "300", "--seq-len", "32", "--untied",
                                           "--gguf", path, "--type", type});
    ASSERT_EQ(synth.status, 0) << synth.err;
    const testing::CliRun run =
        RunKvrt({"generate", "--model", path, "--prompt", "a b", "--greedy", "--max-new-tokens", "4", "--json"});
    ASSERT_EQ(run.status, 0) << type << ": " << run.err;
    const nlohmann::json result = nlohmann::json::parse(run.out);
    EXPECT_EQ(result.at("prompt").at(0), 1) << "SentencePiece prompts start with BOS";
    EXPECT_LE(result.at("generated").size(), 4u);
  }
}

}  // namespace
}  // namespace kvrt
