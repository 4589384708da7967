// `kvrt generate --chat` and `kvrt chat` on the modern fixture models: the turn
// is the model's chat template rendered and tokenized with its control tokens,
// and a conversation stays in the KV cache, each turn forwarding only the tokens
// past what the cache holds.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "test_support.h"

namespace kvrt {
namespace {

using testing::CliRun;
using testing::RunKvrt;
using testing::ShellQuote;

std::string Fixture(const std::string& name) { return std::string(KVRT_FIXTURES_DIR) + "/gguf/modern/" + name; }

const testing::ScratchDir& Scratch() {
  static const testing::ScratchDir scratch;
  return scratch;
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = Scratch().File(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// `kvrt chat` with `input` on stdin.
CliRun RunChat(const std::vector<std::string>& args, const std::string& input) {
  static int counter = 0;
  const std::string in = WriteFile("chat_in_" + std::to_string(counter), input);
  const std::string err = Scratch().File("chat_err_" + std::to_string(counter++));
  std::string command = ShellQuote(KVRT_CLI_PATH) + " chat";
  for (const std::string& arg : args) command += " " + ShellQuote(arg);
  command += " <" + ShellQuote(in) + " 2>" + ShellQuote(err);
  CliRun run;
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) run.out.append(buffer, n);
  const int status = pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.err = testing::ReadText(err);
  return run;
}

// The ids of `text` tokenized with control tokens parsed, as `kvrt tokenize` gives them.
std::vector<uint32_t> TokenizeSpecial(const std::string& model, const std::string& text) {
  const std::string path = WriteFile("special.txt", text);
  const CliRun run = RunKvrt({"tokenize", "--model", model, "--file", path, "--special", "--json"});
  EXPECT_EQ(run.status, 0) << run.err;
  return nlohmann::json::parse(run.out).at("tokens").get<std::vector<uint32_t>>();
}

TEST(GgufChatCli, GenerateChatPromptsWithTheRenderedTemplate) {
  for (const char* file : {"qwen2-f32.gguf", "llama31-f32.gguf"}) {
    const std::string model = Fixture(file);
    const std::string messages =
        WriteFile("messages.json", R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}])");
    const CliRun rendered = RunKvrt({"chat-template", "--model", model, "--messages", messages});
    ASSERT_EQ(rendered.status, 0) << rendered.err;
    const CliRun run = RunKvrt({"generate", "--model", model, "--chat", "--system", "Be brief.", "--prompt",
                                "Hello there", "--max-new-tokens", "4", "--json"});
    ASSERT_EQ(run.status, 0) << run.err;
    const nlohmann::json json = nlohmann::json::parse(run.out);
    EXPECT_EQ(json.at("prompt").get<std::vector<uint32_t>>(), TokenizeSpecial(model, rendered.out)) << file;
    EXPECT_EQ(json.at("generated").size(), 4u) << file;
  }
}

TEST(GgufChatCli, GenerateChatFlagsAreChecked) {
  const std::string model = Fixture("qwen2-f32.gguf");
  CliRun run = RunKvrt({"generate", "--model", model, "--prompt", "Hi", "--system", "S"});
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err, "error: InvalidArgument: --system goes with --chat\n");
  run = RunKvrt({"generate", "--model", model, "--tokens", "1,2", "--chat"});
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err, "error: InvalidArgument: --chat takes the user's message as --prompt\n");
  run = RunKvrt({"generate", "--model", Fixture("kq-f32.gguf"), "--prompt", "Hi", "--chat"});
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("error: MissingKey:"), std::string::npos) << run.err;
}

struct TurnLine {
  size_t turn = 0, conversation = 0, reused = 0, forwarded = 0, prefill = 0, decode = 0, cache = 0;
};

std::vector<TurnLine> TurnLines(const std::string& err) {
  static const std::regex line(
      R"(\[turn (\d+): conversation (\d+) tokens, (\d+) already in the cache, (\d+) forwarded \(prefill (\d+), )"
      R"(decode (\d+)\); reply \d+ tokens \([a-z -]+, decode \d+\); cache (\d+) of \d+\])");
  std::vector<TurnLine> turns;
  for (std::sregex_iterator it(err.begin(), err.end(), line), end; it != end; ++it) {
    auto n = [&](size_t i) { return static_cast<size_t>(std::stoull((*it)[i].str())); };
    turns.push_back({n(1), n(2), n(3), n(4), n(5), n(6), n(7)});
  }
  return turns;
}

TEST(GgufChatCli, EachTurnForwardsOnlyTheTokensTheCacheLacks) {
  for (const char* file : {"qwen2-f32.gguf", "llama31-f32.gguf"}) {
    const CliRun run = RunChat({"--model", Fixture(file), "--system", "Be brief.", "--max-new-tokens", "8"},
                               "Hello there\nAnd a second question?\n/exit\nnever read\n");
    ASSERT_EQ(run.status, 0) << run.err;
    const std::vector<TurnLine> turns = TurnLines(run.err);
    ASSERT_EQ(turns.size(), 2u) << file << ": " << run.err;  // /exit ended the loop
    EXPECT_EQ(turns[0].reused, 0u);
    EXPECT_EQ(turns[0].prefill, turns[0].conversation);
    // Turn 2 re-renders the whole conversation, but the cache holds its start.
    EXPECT_GT(turns[1].reused, turns[0].conversation) << file;
    EXPECT_EQ(turns[1].forwarded, turns[1].conversation - turns[1].reused);
    EXPECT_EQ(turns[1].prefill + turns[1].decode, turns[1].forwarded);
    EXPECT_LE(turns[1].reused, turns[0].cache);
  }
}

// kvrt chat samples with generate's sampler set: one turn of a chat is the reply
// `generate --chat` gives with the same flags and seed (the penalties see the
// same rendered prompt), and the flags are checked the same way.
TEST(GgufChatCli, ChatSamplesWithGeneratesSamplerFlags) {
  const std::string model = Fixture("qwen2-f32.gguf");
  const std::vector<std::string> sampling = {"--temperature", "1.5",           "--top-p", "0.95", "--min-p",
                                             "0.01",          "--repeat-penalty", "1.3",  "--seed", "7",
                                             "--max-new-tokens", "12"};
  std::vector<std::string> chat_args = {"--model", model, "--system", "Be brief."};
  chat_args.insert(chat_args.end(), sampling.begin(), sampling.end());
  const CliRun chat = RunChat(chat_args, "Hello there\n");
  ASSERT_EQ(chat.status, 0) << chat.err;
  std::vector<std::string> generate_args = {"generate", "--model", model,         "--chat",
                                            "--system", "Be brief.", "--prompt", "Hello there"};
  generate_args.insert(generate_args.end(), sampling.begin(), sampling.end());
  const CliRun generate = RunKvrt(generate_args);
  ASSERT_EQ(generate.status, 0) << generate.err;
  ASSERT_FALSE(generate.out.empty());
  EXPECT_EQ(chat.out.substr(0, 2), "> ");
  EXPECT_EQ(chat.out.substr(2, generate.out.size()), generate.out);
  // Another seed draws another reply (the sampling is not greedy in disguise).
  chat_args[chat_args.size() - 3] = "8";
  EXPECT_NE(RunChat(chat_args, "Hello there\n").out, chat.out);
  const CliRun refused = RunChat({"--model", model, "--greedy", "--temperature", "0.5"}, "Hello\n");
  EXPECT_EQ(refused.status, 2);
  EXPECT_EQ(refused.err, "error: InvalidArgument: --greedy excludes --temperature and --top-k\n");
}

TEST(GgufChatCli, ChatNeedsAChatTemplate) {
  const CliRun run = RunChat({"--model", Fixture("kq-f32.gguf")}, "Hello\n");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("error: MissingKey:"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace kvrt
