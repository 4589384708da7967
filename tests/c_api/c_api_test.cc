// The C API, driven from C (c_api_scenarios.c): generation on the llama2.c
// fixture equals run.c's, session logits match run.c within 1e-4 on every
// engine, and errors carry kvrt::ErrorCode values and names.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "c_api_scenarios.h"
#include "kvrt/error.h"
#include "kvrt/kvrt.h"
#include "test_support.h"

namespace kvrt {
namespace {

const std::string kModel = testing::FixturePath("llama2c/gqa_untied.bin");
const std::string kTokenizer = testing::FixturePath("llama2c/tokenizer.bin");
constexpr size_t kVocabulary = 512;

std::vector<uint32_t> RunCTokens() {
  std::vector<uint32_t> tokens;
  std::istringstream in(testing::ReadText(testing::FixturePath("llama2c/runc_tokens.txt")));
  for (std::string id; std::getline(in, id, ',');) tokens.push_back(static_cast<uint32_t>(std::stoul(id)));
  return tokens;
}

struct Engine {
  int backend;
  int precision;
};
constexpr Engine kEngines[] = {{KVRT_BACKEND_REFERENCE, KVRT_PRECISION_F64},
                               {KVRT_BACKEND_FAST, KVRT_PRECISION_F32},
                               {KVRT_BACKEND_FAST, KVRT_PRECISION_F64}};

TEST(CApiTest, GeneratesRunCsContinuation) {
  const std::vector<uint32_t> expected = RunCTokens();
  for (const Engine& engine : kEngines) {
    std::vector<uint32_t> tokens(128);
    size_t count = 0;
    char text[1024];
    ASSERT_EQ(CApiGenerate(kModel.c_str(), kTokenizer.c_str(), "Once upon a time, na\xC3\xAFve", engine.backend, engine.precision,
                           40, tokens.data(), tokens.size(), &count, text, sizeof text),
              0)
        << engine.backend << "/" << engine.precision;
    tokens.resize(count);
    EXPECT_EQ(tokens, expected);
    // What run.c printed after the prompt: the same bytes less the control bytes it skips.
    std::string printable;
    for (const char c : std::string(text)) {
      if (std::isprint(static_cast<unsigned char>(c)) || std::isspace(static_cast<unsigned char>(c))) printable += c;
    }
    EXPECT_EQ("Once upon a time, nave" + printable + "\n",
              testing::ReadText(testing::FixturePath("llama2c/runc_stdout.txt")));
  }
}

TEST(CApiTest, SessionLogitsMatchRunC) {
  const std::vector<uint32_t> tokens = RunCTokens();
  const std::vector<uint8_t> bytes = testing::ReadBytes(testing::FixturePath("llama2c/runc_logits.f32"));
  std::vector<float> runc(bytes.size() / sizeof(float));
  std::memcpy(runc.data(), bytes.data(), bytes.size());
  const size_t steps = tokens.size() - 1;
  for (const Engine& engine : kEngines) {
    std::vector<float> logits(steps * kVocabulary);
    ASSERT_EQ(CApiStepLogits(kModel.c_str(), tokens.data(), steps, engine.backend, engine.precision, logits.data(),
                             kVocabulary),
              0);
    for (size_t i = 0; i < logits.size(); ++i) ASSERT_NEAR(logits[i], runc[i], 1e-4) << i;
  }
}

TEST(CApiTest, SlotStepsMatchAOneSlotSession) {
  const std::vector<uint32_t> tokens = RunCTokens();
  EXPECT_EQ(CApiSlots(kModel.c_str(), tokens.data(), std::min<size_t>(tokens.size(), 20), kVocabulary), 0);
}

TEST(CApiTest, ErrorsCarryTheRuntimesCodesAndNames) {
  const std::string scratch =
      (std::filesystem::temp_directory_path() / ("kvrt_c_api_" + std::to_string(::getpid()))).string();
  int codes[8];
  size_t count = 0;
  ASSERT_EQ(CApiErrors(kModel.c_str(), scratch.c_str(), codes, &count), 0);
  std::filesystem::remove(scratch);
  const std::vector<ErrorCode> expected = {
      ErrorCode::kIo,           ErrorCode::kTruncated,         ErrorCode::kInvalidArgument,
      ErrorCode::kUnsupportedBackend, ErrorCode::kCacheAlreadyBound, ErrorCode::kDecodeRequiresPrefill,
      ErrorCode::kPromptTokenOutOfBounds, ErrorCode::kInvalidArgument};
  ASSERT_EQ(count, expected.size());
  for (size_t i = 0; i < count; ++i) EXPECT_EQ(codes[i], static_cast<int>(expected[i])) << i;
  for (int code = 0; code < static_cast<int>(ErrorCode::kCount); ++code) {
    EXPECT_EQ(std::string(kvrt_error_code_name(code)), ErrorName(static_cast<ErrorCode>(code)));
  }
}

}  // namespace
}  // namespace kvrt

namespace kvrt {
namespace {

// A GGUF through the C API: its tokenizer comes with it (BOS first), and the
// greedy continuation is llama.cpp's (fixtures/gguf/tiny-f32.logits.json, S1).
TEST(CApiGgufTest, AGgufModelLoadsWithItsTokenizerAndGenerates) {
  kvrt_model* model = nullptr;
  ASSERT_EQ(kvrt_model_load(testing::FixturePath("gguf/tiny-f32.gguf").c_str(), &model), nullptr);
  kvrt_model_info info;
  kvrt_model_get_info(model, &info);
  EXPECT_STREQ(info.format, "gguf");
  EXPECT_STREQ(info.tokenizer_kind, "sentencepiece");
  EXPECT_EQ(info.kv_heads, 2u);
  EXPECT_EQ(info.bos_id, 1);
  EXPECT_EQ(info.eos_id, 2);
  uint32_t* ids = nullptr;
  size_t count = 0;
  ASSERT_EQ(kvrt_model_encode_prompt(model, "Once upon a time", &ids, &count), nullptr);
  EXPECT_EQ(std::vector<uint32_t>(ids, ids + count), (std::vector<uint32_t>{1, 9038, 2501, 263, 931}));
  kvrt_generation_options options = kvrt_generation_options_default();
  options.max_new_tokens = 10;
  kvrt_generation* generation = nullptr;
  ASSERT_EQ(kvrt_generate(model, ids, count, &options, nullptr, nullptr, nullptr, &generation), nullptr);
  const std::vector<uint32_t> generated(kvrt_generation_tokens(generation),
                                        kvrt_generation_tokens(generation) + kvrt_generation_count(generation));
  EXPECT_EQ(generated, (std::vector<uint32_t>{4980, 4980, 4980, 4980, 4980, 4980, 4980, 4980, 4980, 2461}));
  kvrt_generation_free(generation);
  kvrt_tokens_free(ids);
  kvrt_model_free(model);
}

// Chat support through the C API: the end-of-generation ids, special-token
// parsing on request, and chat templates by name or from the model.
TEST(CApiGgufTest, ChatTemplatesEndOfGenerationAndSpecialTokens) {
  kvrt_model* model = nullptr;
  ASSERT_EQ(kvrt_model_load(testing::FixturePath("gguf/tiny-f32.gguf").c_str(), &model), nullptr);
  const uint32_t* end = nullptr;
  size_t end_count = 0;
  kvrt_model_end_of_generation(model, &end, &end_count);
  EXPECT_EQ(std::vector<uint32_t>(end, end + end_count), (std::vector<uint32_t>{2}));

  uint32_t* ids = nullptr;
  size_t count = 0;
  ASSERT_EQ(kvrt_model_encode_prompt_special(model, "<s>Once", 1, &ids, &count), nullptr);
  EXPECT_EQ(std::vector<uint32_t>(ids, ids + count), (std::vector<uint32_t>{1, 1, 9038}));
  kvrt_tokens_free(ids);
  ASSERT_EQ(kvrt_model_encode_prompt_special(model, "<s>Once", 0, &ids, &count), nullptr);
  EXPECT_GT(count, 3u) << "plain text by default";
  kvrt_tokens_free(ids);

  const kvrt_chat_message messages[] = {{"system", "Be brief."}, {"user", " Hi! "}};
  char* text = nullptr;
  size_t length = 0;
  ASSERT_EQ(kvrt_chat_apply_template(nullptr, "llama3", messages, 2, 1, &text, &length), nullptr);
  EXPECT_EQ(std::string(text, length),
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(text[length], '\0');
  kvrt_string_free(text);
  // A Jinja text is recognised by its markers.
  ASSERT_EQ(kvrt_chat_apply_template(model, "{{ '<|im_start|>' }}", messages, 1, 0, &text, &length), nullptr);
  EXPECT_EQ(std::string(text, length), "<|im_start|>system\nBe brief.<|im_end|>\n");
  kvrt_string_free(text);
  // This model's file has no template of its own.
  EXPECT_EQ(kvrt_model_chat_template(model), nullptr);
  kvrt_error* error = kvrt_chat_apply_template(model, nullptr, messages, 2, 1, &text, &length);
  EXPECT_EQ(kvrt_error_code(error), KVRT_ERR_MISSING_KEY);
  kvrt_error_free(error);
  error = kvrt_chat_apply_template(model, "no-such-format", messages, 2, 1, &text, &length);
  EXPECT_EQ(kvrt_error_code(error), KVRT_ERR_UNSUPPORTED_CHAT_TEMPLATE);
  EXPECT_STREQ(kvrt_error_name(error), "UnsupportedChatTemplate");
  kvrt_error_free(error);

  // Stopping at the end-of-generation ids: this model's greedy run never reaches
  // its EOS (2), so the run is the plain one.
  ASSERT_EQ(kvrt_model_encode_prompt(model, "Once upon a time", &ids, &count), nullptr);
  kvrt_generation_options options = kvrt_generation_options_default();
  options.max_new_tokens = 10;
  options.stop_at_end_of_generation = 1;
  kvrt_generation* generation = nullptr;
  ASSERT_EQ(kvrt_generate(model, ids, count, &options, nullptr, nullptr, nullptr, &generation), nullptr);
  EXPECT_EQ(kvrt_generation_count(generation), 10u);
  EXPECT_STREQ(kvrt_generation_stop(generation), "token-limit");
  kvrt_generation_free(generation);
  kvrt_tokens_free(ids);
  kvrt_model_free(model);
}

}  // namespace
}  // namespace kvrt
