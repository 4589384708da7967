// The CLI's side of chat models: `kvrt chat-template` against llama.cpp's
// llama_chat_apply_template results (fixtures/gguf/modern/chat.json), `kvrt
// tokenize --special` against llama-tokenize, and --special / "special" on the
// prompts of `generate` and `batch`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "test_support.h"

namespace kvrt {
namespace {

using Json = nlohmann::json;
using testing::CliRun;
using testing::RunKvrt;

std::string Modern(const std::string& name) { return testing::FixturePath("gguf/modern/" + name); }

// A scratch file that removes itself.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& text)
      : path_((std::filesystem::temp_directory_path() /
               ("kvrt_chat_cli_" + std::to_string(getpid()) + "_" + name))
                  .string()) {
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void ExpectOneErrorLine(const CliRun& run, const std::string& name) {
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err.rfind("error: " + name + ": ", 0), 0u) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
}

// Every result of chat.json but the vocabularies' own templates through
// --template NAME or --template-file; those through --model for one
// conversation each (reading a 128k-token vocabulary takes a while).
TEST(ChatTemplateCliTest, PrintsLlamaCppsPromptExactly) {
  const Json entries = Json::parse(testing::ReadText(Modern("chat.json")));
  const std::string any_model = Modern("kq-f32.gguf");
  size_t index = 0, identical = 0, refused = 0;
  for (const Json& entry : entries) {
    const std::string kind = entry["template_kind"].get<std::string>();
    if (kind == "gguf" && entry["conversation"] != "multi_turn") continue;
    if (!testing::CaseRunsInThisBuild(index++)) continue;
    const TempFile messages("messages.json", entry["messages"].dump());
    std::vector<std::string> args = {"chat-template", "--messages", messages.path()};
    std::optional<TempFile> text;
    if (kind == "builtin") {
      args.insert(args.end(), {"--model", any_model, "--template", entry["template_value"].get<std::string>()});
    } else if (kind == "gguf") {
      args.insert(args.end(), {"--model", Modern(entry["template"].get<std::string>())});
    } else {
      text.emplace("template.jinja", entry["template_text"].get<std::string>());
      args.insert(args.end(), {"--model", any_model, "--template-file", text->path()});
    }
    if (!entry["add_generation_prompt"].get<bool>()) args.push_back("--no-generation-prompt");
    const CliRun run = RunKvrt(args);
    SCOPED_TRACE(entry["template"].get<std::string>() + " / " + entry["conversation"].get<std::string>());
    if (entry["rc"].get<int>() < 0) {
      ExpectOneErrorLine(run, "UnsupportedChatTemplate");
      ++refused;
      continue;
    }
    EXPECT_EQ(run.status, 0) << run.err;
    EXPECT_EQ(run.err, "");
    EXPECT_EQ(run.out, entry["result"].get<std::string>());
    identical += run.out == entry["result"].get<std::string>();
  }
  EXPECT_EQ(index, 264u + 8u + 4u + 16u);
  if (testing::kSanitizerCaseStride == 1) {
    EXPECT_EQ(identical, 264u + 8u + 4u);
    EXPECT_EQ(refused, 16u);
  }
}

TEST(ChatTemplateCliTest, BadInputIsOneErrorLine) {
  const TempFile ok("ok.json", R"([{"role": "user", "content": "Hi"}])");
  const std::string model = Modern("kq-f32.gguf");
  ExpectOneErrorLine(RunKvrt({"chat-template", "--model", model, "--messages", ok.path(), "--template", "chatml3"}),
                     "UnsupportedChatTemplate");
  ExpectOneErrorLine(RunKvrt({"chat-template", "--model", model, "--messages", ok.path()}), "MissingKey");
  ExpectOneErrorLine(RunKvrt({"chat-template", "--model", model, "--messages", ok.path(), "--template", "chatml",
                              "--template-file", ok.path()}),
                     "InvalidArgument");
  ExpectOneErrorLine(RunKvrt({"chat-template", "--model", model + ".missing", "--messages", ok.path(),
                              "--template", "chatml"}),
                     "Io");
  ExpectOneErrorLine(RunKvrt({"chat-template", "--messages", ok.path(), "--template", "chatml"}), "InvalidArgument");
  for (const char* bad : {R"({"role": "user", "content": "Hi"})", R"([{"role": "user"}])",
                          R"([{"role": "user", "content": 3}])", R"([{"role": "user", "content": "a", "name": "x"}])",
                          R"([{"role": "user", "content": "a\u0000b"}])", R"([{"role": "user", "content": "a")"}) {
    const TempFile messages("bad.json", bad);
    ExpectOneErrorLine(RunKvrt({"chat-template", "--model", model, "--messages", messages.path(), "--template", "chatml"}),
                       "InvalidArgument");
  }
  // An empty conversation is only the generation prompt.
  const TempFile none("none.json", "[]");
  EXPECT_EQ(RunKvrt({"chat-template", "--model", model, "--messages", none.path(), "--template", "chatml"}).out,
            "<|im_start|>assistant\n");
}

std::vector<uint32_t> TokenizeJson(const std::vector<std::string>& args) {
  const CliRun run = RunKvrt(args);
  EXPECT_EQ(run.status, 0) << run.err;
  const Json out = Json::parse(run.out, nullptr, false);
  EXPECT_FALSE(out.is_discarded()) << run.out;
  return out.is_discarded() ? std::vector<uint32_t>{} : out["tokens"].get<std::vector<uint32_t>>();
}

// Entries of tokenize.json whose strings spell special tokens, through the CLI's
// --json output (its format unchanged).
TEST(ModernTokenizeCliTest, SpecialParsesControlTokensAsLlamaTokenizeDoes) {
  size_t checked = 0;
  for (const Json& result : Json::parse(testing::ReadText(Modern("tokenize.json")))) {
    const std::string prompt = result["prompt"].get<std::string>();
    // Each run reads a whole vocabulary: two strings, every way (the unit tests
    // take all 180).
    if (prompt != "<|begin_of_text|>Hello<|eot_id|>" && prompt.find("<think>") == std::string::npos) continue;
    std::vector<std::string> args = {"tokenize", "--model", Modern(result["vocab"].get<std::string>()),
                                     "--prompt", prompt, "--json"};
    if (result["parse_special"].get<bool>()) args.push_back("--special");
    if (!result["add_bos"].get<bool>()) args.push_back("--no-bos");
    EXPECT_EQ(TokenizeJson(args), result["tokens"].get<std::vector<uint32_t>>())
        << result["vocab"] << " special " << result["parse_special"] << ": " << prompt;
    ++checked;
  }
  EXPECT_EQ(checked, 12u);
}

// --special on generate's prompt, and "special" on a batch request line: the
// SentencePiece model's "<s>" becomes BOS (1) only when asked.
TEST(ModernTokenizeCliTest, GenerateAndBatchParseSpecialTokensOnRequest) {
  const std::string model = Modern("kq-f32.gguf");
  auto prompt_of = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"generate", "--model", model, "--prompt", "<s>Once",
                                     "--max-new-tokens", "1", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun run = RunKvrt(args);
    EXPECT_EQ(run.status, 0) << run.err;
    return Json::parse(run.out)["prompt"].get<std::vector<uint32_t>>();
  };
  const std::vector<uint32_t> plain = prompt_of({}), parsed = prompt_of({"--special"});
  ASSERT_GE(parsed.size(), 2u);
  EXPECT_EQ(parsed[0], 1u);
  EXPECT_EQ(parsed[1], 1u) << "BOS added, then the spelled <s>";
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1u), 1) << "plain text: only the added BOS";
  EXPECT_GT(plain.size(), parsed.size());

  const TempFile requests("requests.jsonl",
                          R"({"id": "plain", "prompt": "<s>Once", "max_new_tokens": 1})"
                          "\n"
                          R"({"id": "parsed", "prompt": "<s>Once", "special": true, "max_new_tokens": 1})"
                          "\n");
  const CliRun batch = RunKvrt({"batch", "--model", model, "--requests", requests.path()});
  ASSERT_EQ(batch.status, 0) << batch.err;
  const std::vector<std::string> lines = testing::Lines(batch.out);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(Json::parse(lines[0])["prompt"].get<std::vector<uint32_t>>(), plain);
  EXPECT_EQ(Json::parse(lines[1])["prompt"].get<std::vector<uint32_t>>(), parsed);
}

}  // namespace
}  // namespace kvrt
