// Strings a file supplies (an architecture, a tensor name, a tokenizer model) go
// into error messages, and every message is one line on stderr (issue 38): an
// architecture "qwen2\nerror: Io: injected" printed a forged second `error:`
// line, a NUL cut the message short, and a 1 MB tensor name gave a 1 MB line.
// Control characters are escaped and a message is bounded, in the CLI and in the
// C API's kvrt_error_message alike.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "formats/gguf/gguf_writer.h"
#include "gguf_rewrite.h"
#include "kvrt/kvrt.h"
#include "test_support.h"

namespace kvrt::gguf::testing {
namespace {

class GgufErrorTextTest : public ::testing::Test {
 protected:
  // The small model with `architecture`, or with an extra tensor called `tensor`.
  std::string Write(const std::string& name, const std::string& architecture, const std::string& tensor = {}) {
    Result<GgufFile> file = ParseBytes(SmallModelFile(GgmlType::kF32));
    EXPECT_TRUE(file);
    const std::vector<float> values(32, 0.0f);
    const uint64_t ne[] = {32};
    const std::vector<uint8_t> bytes =
        Rewrite(*file, [](std::string_view key) { return key != "general.architecture"; },
                [&](GgufWriter& w) {
                  w.AddString("general.architecture", architecture);
                  if (!tensor.empty()) {
                    EXPECT_TRUE(w.AddTensor(tensor, ne, GgmlType::kF32, values));
                  }
                });
    const std::string path = dir_.File(name);
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                static_cast<std::streamsize>(bytes.size()));
    return path;
  }

  // kvrt logits' stderr for the file, which must fail with exit 2.
  std::string CliError(const std::string& path) {
    const kvrt::testing::CliRun run = kvrt::testing::RunKvrt({"logits", "--model", path, "--tokens", "1"});
    EXPECT_EQ(run.status, 2);
    return run.err;
  }

  // kvrt_model_load's message for the file.
  static std::string CApiMessage(const std::string& path) {
    kvrt_model* model = nullptr;
    kvrt_error* error = kvrt_model_load(path.c_str(), &model);
    EXPECT_NE(error, nullptr);
    if (error == nullptr) {
      kvrt_model_free(model);
      return {};
    }
    std::string message = kvrt_error_message(error);
    kvrt_error_free(error);
    return message;
  }

  kvrt::testing::ScratchDir dir_;
};

TEST_F(GgufErrorTextTest, ANewlineInAFileStringCannotForgeASecondErrorLine) {
  const std::string path = Write("newline.gguf", "qwen2\nerror: Io: injected");
  EXPECT_EQ(CliError(path),
            "error: UnsupportedArchitecture: general.architecture = qwen2\\nerror: Io: injected: kvrt reads "
            "GGUF models of the architectures llama and qwen2 only\n");
  EXPECT_EQ(CApiMessage(path),
            "general.architecture = qwen2\\nerror: Io: injected: kvrt reads GGUF models of the architectures llama and qwen2 only");
}

TEST_F(GgufErrorTextTest, ANulAndOtherControlsAreEscapedNotCut) {
  const std::string path = Write("nul.gguf", std::string("qw\0en\x1b[2J\r\t\x7f\xc2\x85\xff", 15));
  EXPECT_EQ(CliError(path),
            "error: UnsupportedArchitecture: general.architecture = qw\\0en\\x1b[2J\\r\\t\\x7f\\u{85}\\xff: kvrt "
            "reads GGUF models of the architectures llama and qwen2 only\n");
}

TEST_F(GgufErrorTextTest, AHugeTensorNameGivesABoundedLineThatStillSaysWhatIsWrong) {
  const std::string path = Write("long.gguf", "llama", "blk.0." + std::string(1 << 20, 'x'));
  const std::string line = CliError(path);
  EXPECT_LE(line.size(), 1100u);
  EXPECT_EQ(line.rfind("error: UnexpectedTensor: tensor blk.0.xxx", 0), 0u) << line.substr(0, 200);
  EXPECT_NE(line.find("xxx…xxx"), std::string::npos);
  EXPECT_NE(line.find("is not part of a model kvrt can run"), std::string::npos);
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_LE(CApiMessage(path).size(), 1100u);
}

}  // namespace
}  // namespace kvrt::gguf::testing
