// kvrt batch on the request files of issue 38's hostile-input run:
//   * a prompt that starts with "--" was rejected as a flag without a value, and
//     one holding U+0000 was cut at the NUL: request fields never go through the
//     command-line parser now;
//   * memory grew by ~170 KB per request (vocabulary-sized sampler buffers per
//     request, fragmented on the heap) until the kernel killed the process: it is
//     bounded by the slots now, whatever the number of requests;
//   * an overlong line (a 100 MB prompt took 7 GB before PromptTooLong) is refused
//     before it is parsed.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "formats/llama2c/llama2c.h"
#include "test_support.h"

namespace kvrt {
namespace {

using Json = nlohmann::json;
using testing::RunKvrt;

// The exit status and peak RSS (KiB) of `kvrt args...` with stdout and stderr
// sent to files.
struct MeasuredRun {
  int status = -1;
  long peak_rss_kib = 0;
};

MeasuredRun RunKvrtMeasured(const std::vector<std::string>& args, const std::string& out_path) {
  std::vector<std::string> argv_storage = {KVRT_CLI_PATH};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_storage) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  struct rusage usage {};
  ::wait4(pid, &status, 0, &usage);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, usage.ru_maxrss};
}

class BatchReliabilityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = dir_.File("m.bin");
    tokenizer_path_ = dir_.File("tok.bin");
    const testing::CliRun synth =
        RunKvrt({"synth", "--dim", "64", "--layers", "2", "--heads", "4", "--ffn", "96", "--vocab", "300",
                 "--seq-len", "64", "--seed", "4", "--llama2c", model_, "--tokenizer", tokenizer_path_});
    ASSERT_EQ(synth.status, 0) << synth.err;
    Result<Tokenizer> tokenizer = LoadLlama2cTokenizer(tokenizer_path_, 300);
    ASSERT_TRUE(tokenizer) << tokenizer.error().Debug();
    tokenizer_.emplace(std::move(*tokenizer));
  }

  std::string WriteRequests(const std::vector<std::string>& lines) {
    const std::string path = dir_.File("requests" + std::to_string(files_++) + ".jsonl");
    std::ofstream out(path, std::ios::binary);
    for (const std::string& line : lines) out << line << "\n";
    return path;
  }

  // The prompt ids batch reports for one request with `prompt`.
  std::vector<uint32_t> BatchPromptIds(const std::string& prompt) {
    const Json line = {{"prompt", prompt}, {"max_new_tokens", 1}};
    const testing::CliRun run = RunKvrt(
        {"batch", "--model", model_, "--tokenizer", tokenizer_path_, "--requests", WriteRequests({line.dump()})});
    EXPECT_EQ(run.status, 0) << run.err;
    if (run.status != 0) return {};
    return Json::parse(run.out).at("prompt").get<std::vector<uint32_t>>();
  }

  testing::ScratchDir dir_;
  std::string model_, tokenizer_path_;
  std::optional<Tokenizer> tokenizer_;
  int files_ = 0;
};

TEST_F(BatchReliabilityTest, PromptsThatLookLikeFlagsAreText) {
  for (const std::string prompt : {"--- Title", "--help", "--", "--prompt=x"}) {
    EXPECT_EQ(BatchPromptIds(prompt), *tokenizer_->EncodePrompt(prompt)) << prompt;
  }
}

TEST_F(BatchReliabilityTest, APromptKeepsEveryByteAfterAnEmbeddedNul) {
  const std::string prompt("Once\0 upon", 10);
  const std::vector<uint32_t> whole = *tokenizer_->EncodePrompt(prompt);
  ASSERT_GT(whole.size(), tokenizer_->EncodePrompt("Once")->size());
  EXPECT_EQ(BatchPromptIds(prompt), whole);
}

TEST_F(BatchReliabilityTest, AnOverlongLineIsRefusedBeforeItIsParsed) {
  const std::string huge = "{\"prompt\":\"" + std::string(17 << 20, 'a') + "\"}";
  const std::string path = WriteRequests({"{\"tokens\":[1]}", huge});
  const MeasuredRun run = RunKvrtMeasured(
      {"batch", "--model", model_, "--tokenizer", tokenizer_path_, "--requests", path}, dir_.File("out.txt"));
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(testing::ReadText(dir_.File("out.txt")),
            "error: InvalidArgument: requests line 2 is longer than 16777216 bytes, the most a request line may "
            "have\n");
  EXPECT_LT(run.peak_rss_kib, 200 * 1024);
}

// Peak RSS must not grow with the number of requests. A vocabulary of 32,000
// makes the old per-request sampler buffers (384 KB) show: 2,000 requests took
// over 300 MB more than 200 did.
TEST_F(BatchReliabilityTest, MemoryDoesNotGrowWithTheNumberOfRequests) {
#if defined(KVRT_SANITIZER_BUILD)
  GTEST_SKIP() << "peak RSS means nothing under a sanitizer";
#endif
  const std::string wide = dir_.File("wide.gguf");
  const testing::CliRun synth = RunKvrt({"synth", "--dim", "64", "--layers", "1", "--heads", "4", "--ffn", "96",
                                         "--vocab", "32000", "--seq-len", "32", "--gguf", wide});
  ASSERT_EQ(synth.status, 0) << synth.err;
  long peak[2] = {0, 0};
  const size_t counts[2] = {200, 2000};
  for (int i = 0; i < 2; ++i) {
    std::vector<std::string> lines(counts[i], "{\"tokens\":[1,2,3],\"max_new_tokens\":2,\"temperature\":0.8,"
                                              "\"top_k\":40,\"seed\":7}");
    const MeasuredRun run = RunKvrtMeasured({"batch", "--model", wide, "--requests", WriteRequests(lines),
                                             "--threads", "1"},
                                            dir_.File("out.txt"));
    ASSERT_EQ(run.status, 0) << testing::ReadText(dir_.File("out.txt")).substr(0, 400);
    peak[i] = run.peak_rss_kib;
  }
  EXPECT_LT(peak[1], peak[0] + 16 * 1024) << "200 requests: " << peak[0] << " KiB, 2000: " << peak[1] << " KiB";
}

}  // namespace
}  // namespace kvrt
