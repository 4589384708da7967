// The Llama 3 ("llama-bpe") and Qwen ("qwen2") byte-level BPE vocabularies
// against llama.cpp b4747 (fixtures/gguf/modern, made with llama.cpp's own
// tools): llama.cpp's tokenizer test cases, every llama-tokenize result of
// tokenize.json with and without special-token parsing, and the special ids and
// end-of-generation sets of vocab_info.json.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "kvrt/tokenizer.h"
#include "test_support.h"
#include "tokenizer/vocabulary_for_test.h"

namespace kvrt {
namespace {

using Json = nlohmann::json;

std::string Modern(const std::string& name) { return testing::FixturePath("gguf/modern/" + name); }

const Tokenizer& Vocabulary(const std::string& name) {
  const Tokenizer* tokenizer = testing::SharedTokenizer(Modern(name));
  if (tokenizer == nullptr) {
    ADD_FAILURE() << "could not read the vocabulary of " << name;
    static const Tokenizer empty;
    return empty;
  }
  return *tokenizer;
}

Json ReadJson(const std::string& name) { return Json::parse(testing::ReadText(Modern(name))); }

struct CaseFile {
  const char* vocabulary;
  const char* cases;  // llama.cpp's models/ggml-vocab-<name>.gguf test files
};

class LlamaCppCasesTest : public ::testing::TestWithParam<CaseFile> {};

TEST_P(LlamaCppCasesTest, MatchesEveryTestString) {
  const Tokenizer& tokenizer = Vocabulary(GetParam().vocabulary);
  const std::vector<testing::TokenizationCase> cases =
      testing::ReadTokenizationCases(Modern(GetParam().cases));
  ASSERT_EQ(cases.size(), 46u);
  size_t matches = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    Result<std::vector<uint32_t>> ids = tokenizer.EncodeContent(cases[i].text);
    ASSERT_TRUE(ids) << ids.error().Debug();
    EXPECT_EQ(*ids, cases[i].ids) << "case " << i << ": \"" << cases[i].text << "\"";
    matches += *ids == cases[i].ids;
    // Plain-text encoding loses nothing: decoding gives the text back.
    Result<std::string> text = tokenizer.DecodeContentUtf8(*ids);
    ASSERT_TRUE(text) << text.error().Debug();
    EXPECT_EQ(*text, cases[i].text) << "case " << i;
  }
  EXPECT_EQ(matches, cases.size());
}

INSTANTIATE_TEST_SUITE_P(Modern, LlamaCppCasesTest,
                         ::testing::Values(CaseFile{"llama3.vocab.gguf", "ggml-vocab-llama-bpe.gguf"},
                                           CaseFile{"qwen.vocab.gguf", "ggml-vocab-qwen2.gguf"}));

// llama-tokenize's ids for 30 strings, both vocabularies, with and without
// parse_special, and (Llama 3) with and without BOS.
TEST(ModernBpeTest, MatchesEveryLlamaTokenizeResult) {
  const Json results = ReadJson("tokenize.json");
  ASSERT_EQ(results.size(), 180u);
  size_t matches = 0, special = 0;
  for (const Json& result : results) {
    const Tokenizer& tokenizer = Vocabulary(result["vocab"].get<std::string>());
    const std::string prompt = result["prompt"].get<std::string>();
    const SpecialTokens parse =
        result["parse_special"].get<bool>() ? SpecialTokens::kParse : SpecialTokens::kAsText;
    const auto expected = result["tokens"].get<std::vector<uint32_t>>();
    Result<std::vector<uint32_t>> ids = result["add_bos"].get<bool>()
                                            ? tokenizer.EncodePrompt(prompt, parse)
                                            : tokenizer.EncodeContent(prompt, parse);
    ASSERT_TRUE(ids) << ids.error().Debug();
    EXPECT_EQ(*ids, expected) << result["vocab"] << " parse_special " << result["parse_special"]
                              << " add_bos " << result["add_bos"] << ": \"" << prompt << "\"";
    matches += *ids == expected;
    special += parse == SpecialTokens::kParse;
  }
  EXPECT_EQ(matches, 180u);
  EXPECT_EQ(special, 90u);
}

// The same text, read as plain text and with its special tokens parsed.
TEST(ModernBpeTest, ControlTokensAreTextUnlessParsed) {
  const Tokenizer& llama3 = Vocabulary("llama3.vocab.gguf");
  const std::string text = "<|begin_of_text|>Hello<|eot_id|>";
  EXPECT_EQ(*llama3.EncodePrompt(text, SpecialTokens::kParse),
            (std::vector<uint32_t>{128000, 128000, 9906, 128009}))
      << "BOS added and spelled: twice, as in llama.cpp";
  const std::vector<uint32_t> plain = *llama3.EncodeContent(text);
  EXPECT_GT(plain.size(), 4u);
  for (const uint32_t id : plain) EXPECT_LT(id, 128000u) << "no control token in plain text";
  EXPECT_EQ(*llama3.DecodeContentUtf8(plain), text);
  // Qwen's user-defined "<think>" is its token either way; control tokens are not.
  const Tokenizer& qwen = Vocabulary("qwen.vocab.gguf");
  EXPECT_EQ(*qwen.EncodeContent("<think>"), (std::vector<uint32_t>{151667}));
  EXPECT_EQ(*qwen.EncodeContent("<|im_end|>", SpecialTokens::kParse),
            (std::vector<uint32_t>{151645}));
  EXPECT_NE(*qwen.EncodeContent("<|im_end|>"), (std::vector<uint32_t>{151645}));
}

// bos/eos, add_bos/add_eos and the end-of-generation set of every vocabulary
// in the fixtures that vocab_info.json describes.
TEST(ModernBpeTest, SpecialIdsAndEndOfGenerationAreLlamaCpps) {
  size_t checked = 0;
  for (const Json& info : ReadJson("vocab_info.json")) {
    const std::string file = info["file"].get<std::string>();
    if (file != "llama3.vocab.gguf" && file != "qwen.vocab.gguf" && file != "kq-f32.gguf") continue;
    const Tokenizer& tokenizer = Vocabulary(file);
    SCOPED_TRACE(file);
    EXPECT_EQ(tokenizer.vocabulary_size(), info["n_tokens"].get<size_t>());
    EXPECT_EQ(tokenizer.bos_id(), info["bos"].get<uint32_t>());
    EXPECT_EQ(tokenizer.eos_id(), info["eos"].get<uint32_t>());
    EXPECT_EQ(tokenizer.add_bos(), info["add_bos"].get<bool>());
    EXPECT_EQ(tokenizer.add_eos(), info["add_eos"].get<bool>());
    const std::span<const uint32_t> eog = tokenizer.end_of_generation_ids();
    EXPECT_EQ(std::vector<uint32_t>(eog.begin(), eog.end()), info["eog"].get<std::vector<uint32_t>>());
    // The file's chat template, byte for byte (kq-f32 has none).
    if (info["chat_template"].is_string()) {
      ASSERT_TRUE(tokenizer.chat_template());
      EXPECT_EQ(*tokenizer.chat_template(), info["chat_template"].get<std::string>());
    } else {
      EXPECT_FALSE(tokenizer.chat_template());
    }
    ++checked;
  }
  EXPECT_EQ(checked, 3u);
}

}  // namespace
}  // namespace kvrt
