// --ctx-size N on every command that opens a KV cache (generate, batch, logits,
// chat): the cache is allocated for N positions, not for the model's context.
//
// The cache's pages are backed only when written, so peak RSS cannot tell a
// cache of 2,048 positions from one of 32,768 when a few are used; the address
// space can. A model of 32,768 positions whose full f32 cache takes 512 MiB runs
// under a 384 MiB address-space limit only when --ctx-size shrinks the cache.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "test_support.h"

namespace kvrt {
namespace {

using testing::CliRun;
using testing::RunKvrt;

constexpr size_t kModelPositions = 32768;
// 2 (K, V) x 16 layers x 32,768 positions x 128 kv width x 4 bytes: 512 MiB at
// the model's context, 32 MiB at --ctx-size 2048.
constexpr rlim_t kAddressLimit = rlim_t{384} << 20;

struct LimitedRun {
  int status = -1;
  std::string output;  // stdout and stderr
};

// `kvrt args...` with stdin at /dev/null, under the address-space limit unless
// `limited` is false (a sanitizer build cannot start under it).
LimitedRun RunKvrtLimited(const std::vector<std::string>& args, const std::string& out_path, bool limited = true) {
  std::vector<std::string> argv_storage = {KVRT_CLI_PATH};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_storage) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    if (limited) {
      const struct rlimit limit {kAddressLimit, kAddressLimit};
      ::setrlimit(RLIMIT_AS, &limit);
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, testing::ReadText(out_path)};
}

void ExpectOneErrorLine(const CliRun& run, const std::string& name) {
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err.rfind("error: " + name + ": ", 0), 0u) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
}

class ContextSizeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = dir_.File("long.bin");
    const CliRun synth = RunKvrt({"synth", "--dim", "128", "--layers", "16", "--heads", "2", "--ffn", "128",
                                  "--vocab", "64", "--seq-len", std::to_string(kModelPositions), "--seed", "3",
                                  "--llama2c", model_});
    ASSERT_EQ(synth.status, 0) << synth.err;
  }

  testing::ScratchDir dir_;
  std::string model_;
};

TEST_F(ContextSizeTest, ACacheOfTheModelsContextDoesNotFitTheLimit) {
#if defined(KVRT_SANITIZER_BUILD)
  GTEST_SKIP() << "a sanitizer reserves terabytes of address space";
#endif
  const LimitedRun run =
      RunKvrtLimited({"logits", "--model", model_, "--tokens", "1,2,3", "--threads", "1"}, dir_.File("out.txt"));
  EXPECT_EQ(run.status, 2) << run.output.substr(0, 400);
  // The layer cache's AllocationFailed, wrapped with the layer.
  EXPECT_NE(run.output.find("could not allocate"), std::string::npos) << run.output.substr(0, 400);
}

TEST_F(ContextSizeTest, EveryCommandAllocatesForItsContextSizeOnly) {
#if defined(KVRT_SANITIZER_BUILD)
  GTEST_SKIP() << "a sanitizer reserves terabytes of address space";
#endif
  const std::string requests = dir_.File("requests.jsonl");
  {
    std::ofstream(requests) << "{\"tokens\":[1,2,3],\"max_new_tokens\":4}\n";
  }
  const std::vector<std::vector<std::string>> commands = {
      {"logits", "--model", model_, "--tokens", "1,2,3", "--ctx-size", "2048"},
      {"logits", "--model", model_, "--tokens", "1,2,3", "-c", "2048", "--backend", "reference"},
      {"generate", "--model", model_, "--tokens", "1,2,3", "-n", "4", "--ctx-size", "2048"},
      {"batch", "--model", model_, "--requests", requests, "--ctx-size", "2048"},
  };
  for (std::vector<std::string> command : commands) {
    command.insert(command.end(), {"--threads", "1"});
    const LimitedRun run = RunKvrtLimited(command, dir_.File("out.txt"));
    EXPECT_EQ(run.status, 0) << command[0] << ": " << run.output.substr(0, 400);
  }
}

TEST_F(ContextSizeTest, LogitsAreTheSameInAShorterCache) {
  const std::vector<double> whole = testing::RunLogits(
      {"logits", "--model", model_, "--tokens", "5,6,7,8", "--threads", "1", "--json"});
  const std::vector<double> short_cache = testing::RunLogits(
      {"logits", "--model", model_, "--tokens", "5,6,7,8", "--threads", "1", "--ctx-size", "4", "--json"});
  ASSERT_EQ(whole.size(), 64u);
  EXPECT_EQ(short_cache, whole);
}

TEST_F(ContextSizeTest, LogitsRefuseWhatTheContextCannotHold) {
  ExpectOneErrorLine(RunKvrt({"logits", "--model", model_, "--tokens", "1,2,3", "--ctx-size", "2"}),
                     "PromptTooLong");
  ExpectOneErrorLine(
      RunKvrt({"logits", "--model", model_, "--tokens", "1", "--ctx-size", std::to_string(kModelPositions + 1)}),
      "CapacityExceedsPositions");
  ExpectOneErrorLine(RunKvrt({"logits", "--model", model_, "--tokens", "1", "--ctx-size", "4", "--uncached"}),
                     "InvalidArgument");
  ExpectOneErrorLine(RunKvrt({"logits", "--model", model_, "--tokens", "1", "--ctx-size", "many"}),
                     "InvalidArgument");
}

// The chat's banner names the context it holds; end of input ends it at once. (The
// address-space limit is for the tests above; this one checks the banner only.)
TEST(ChatContextSizeTest, TheConversationHoldsTheContextSize) {
  testing::ScratchDir dir;
  const std::string model = testing::FixturePath("gguf/modern/qwen2-f32.gguf");
  const LimitedRun sized = RunKvrtLimited({"chat", "--model", model, "--ctx-size", "48", "--threads", "1"},
                                          dir.File("out.txt"), /*limited=*/false);
  EXPECT_EQ(sized.status, 0) << sized.output;
  EXPECT_NE(sized.output.find(", context 48 tokens."), std::string::npos) << sized.output;
}

}  // namespace
}  // namespace kvrt
