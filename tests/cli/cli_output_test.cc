// Every kvrt command checks that its output arrived (issue 38: `kvrt logits
// --json > /dev/full`, and every command writing to a full disk, exited 0 with no
// error). The property: each command invocation below, which succeeds when its
// stdout is writable, exits 2 with one `error: Io: ...` line on stderr when its
// stdout is /dev/full.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "test_support.h"

namespace kvrt {
namespace {

using testing::RunKvrt;
using testing::ShellQuote;

struct FullRun {
  int status = -1;
  std::string err;
};

// `kvrt args...` with stdout on /dev/full.
FullRun RunIntoFullDevice(const std::vector<std::string>& args, const testing::ScratchDir& dir) {
  std::string command = ShellQuote(KVRT_CLI_PATH);
  for (const std::string& arg : args) command += " " + ShellQuote(arg);
  const std::string err = dir.File("full.err");
  command += " >/dev/full 2>" + ShellQuote(err);
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, testing::ReadText(err)};
}

std::string BenchRun(const testing::ScratchDir& dir, const std::string& name) {
  nlohmann::json rows = nlohmann::json::array();
  for (const char* aggregate : {"median", "cv"}) {
    rows.push_back({{"name", std::string("BM_X_") + aggregate}, {"run_name", "BM_X"}, {"run_type", "aggregate"},
                    {"aggregate_name", aggregate}, {"real_time", aggregate[0] == 'm' ? 100.0 : 0.01},
                    {"time_unit", "ns"}});
  }
  const std::string path = dir.File(name);
  std::ofstream(path) << nlohmann::json{{"context", {{"num_cpus", 2}}}, {"benchmarks", rows}}.dump();
  return path;
}

TEST(CliOutput, EveryCommandReportsOutputThatDidNotArrive) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full";
  const testing::ScratchDir dir;
  const std::string model = testing::FixturePath("llama2c/gqa_untied.bin");
  const std::string tokenizer = testing::FixturePath("llama2c/tokenizer.bin");
  const std::string gguf = testing::FixturePath("gguf/tiny-f32.gguf");
  const std::string requests = dir.File("requests.jsonl");
  std::ofstream(requests) << "{\"tokens\":[1,2],\"max_new_tokens\":2}\n{\"prompt\":\"Once\",\"max_new_tokens\":2}\n";
  const std::string bench = BenchRun(dir, "bench.json");
  const std::string messages = dir.File("messages.json");
  std::ofstream(messages) << R"([{"role": "user", "content": "Hi"}])";

  const std::vector<std::vector<std::string>> invocations = {
      {"--version"},
      {"--help"},
      {"inspect", model},
      {"inspect", gguf, "--json"},
      {"inspect", gguf, "--weights", "q8_0"},
      {"tokenize", "--model", gguf, "--prompt", "Once upon a time"},
      {"tokenize", "--model", gguf, "--prompt", "Once upon a time", "--json"},
      {"logits", "--model", model, "--tokens", "1,2,3"},
      {"logits", "--model", model, "--tokens", "1,2,3", "--json"},
      {"generate", "--model", model, "--tokenizer", tokenizer, "--prompt", "Once", "--max-new-tokens", "4"},
      {"generate", "--model", model, "--tokens", "1,2", "--max-new-tokens", "4", "--json"},
      {"generate", "--model", model, "--tokens", "1,2", "--max-new-tokens", "4", "--uncached", "--json"},
      {"batch", "--model", model, "--tokenizer", tokenizer, "--requests", requests},
      {"synth", "--dim", "32", "--layers", "1", "--heads", "4", "--ffn", "64", "--vocab", "300", "--seq-len", "16",
       "--gguf", dir.File("synth.gguf")},
      {"report"},
      {"bench-compare", bench, bench},
      {"chat-template", "--model", gguf, "--messages", messages, "--template", "chatml"},
      {"logits", "--help"},
      {"batch", "--help"},
  };
  for (const std::vector<std::string>& args : invocations) {
    std::string shown;
    for (const std::string& arg : args) shown += " " + arg;
    const testing::CliRun writable = RunKvrt(args);
    ASSERT_EQ(writable.status, 0) << shown << ": " << writable.err;
    const FullRun full = RunIntoFullDevice(args, dir);
    EXPECT_EQ(full.status, 2) << shown;
    EXPECT_EQ(full.err, "error: Io: could not write standard output: No space left on device (os error 28)\n")
        << shown;
  }
}

}  // namespace
}  // namespace kvrt
