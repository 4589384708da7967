// The GGUF SentencePiece tokenizer (tokenizer.ggml.model "llama") against
// llama.cpp: the 46 test strings of ggml-vocab-llama-spm.gguf and the 15 prompts
// of tiny.tokenize.json, plus decoding and its round trip.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kvrt/tokenizer.h"
#include "test_support.h"
#include "tokenizer/vocabulary_for_test.h"
#include "tokenizer/tokenizer_impl.h"

namespace kvrt {
namespace {

const std::string kSpmVocabulary = testing::FixturePath("gguf/vocab/ggml-vocab-llama-spm.gguf");

// The vocabulary is read once for the whole suite (testing::SharedTokenizer).
class SentencePieceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tokenizer_ = testing::SharedTokenizer(kSpmVocabulary);
    ASSERT_NE(tokenizer_, nullptr) << "could not read the vocabulary of " << kSpmVocabulary;
  }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const Tokenizer* tokenizer_ = nullptr;
};

TEST_F(SentencePieceTest, DescribesItself) {
  EXPECT_EQ(tokenizer().kind(), TokenizerKind::kSentencePiece);
  EXPECT_EQ(tokenizer().kind_name(), "sentencepiece");
  EXPECT_EQ(tokenizer().vocabulary_size(), 32000u);
  EXPECT_EQ(tokenizer().bos_id(), 1u);
  EXPECT_EQ(tokenizer().eos_id(), 2u);
  EXPECT_TRUE(tokenizer().add_bos());  // the file says so
  EXPECT_FALSE(tokenizer().add_eos());
}

TEST_F(SentencePieceTest, MatchesLlamaCppOnEveryVocabularyTestString) {
  const std::vector<testing::TokenizationCase> cases =
      testing::ReadTokenizationCases(kSpmVocabulary);
  ASSERT_EQ(cases.size(), 46u);
  size_t matches = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    Result<std::vector<uint32_t>> ids = tokenizer().EncodeContent(cases[i].text);
    ASSERT_TRUE(ids) << ids.error().Debug();
    EXPECT_EQ(*ids, cases[i].ids) << "test " << i << ": \"" << cases[i].text << "\"";
    matches += *ids == cases[i].ids;
  }
  EXPECT_EQ(matches, cases.size());
}

// tiny-f32.gguf has no add_bos_token, add_eos_token or pre key: llama.cpp's
// defaults (BOS added) do the work of the absent keys.
TEST_F(SentencePieceTest, MatchesLlamaCppOnTheTinyModelPrompts) {
  std::optional<VocabularyData> data = testing::LoadVocabularyForTest(testing::FixturePath("gguf/tiny-f32.gguf"));
  ASSERT_TRUE(data);
  EXPECT_TRUE(data->pre.empty());
  EXPECT_FALSE(data->add_bos.has_value());
  Result<Tokenizer> tiny = TokenizerFromVocabulary(std::move(*data));
  ASSERT_TRUE(tiny) << tiny.error().Debug();
  ASSERT_TRUE(tiny->add_bos());
  ASSERT_FALSE(tiny->add_eos());

  std::ifstream in(testing::FixturePath("gguf/tiny.tokenize.json"));
  const nlohmann::json cases = nlohmann::json::parse(in);
  ASSERT_EQ(cases.size(), 15u);
  for (const nlohmann::json& item : cases) {
    const std::string prompt = item.at("prompt").get<std::string>();
    ASSERT_TRUE(item.at("add_bos").get<bool>());
    ASSERT_FALSE(item.at("parse_special").get<bool>());
    Result<std::vector<uint32_t>> ids = tiny->EncodePrompt(prompt);
    ASSERT_TRUE(ids) << ids.error().Debug();
    EXPECT_EQ(*ids, item.at("tokens").get<std::vector<uint32_t>>())
        << "prompt \"" << prompt << "\"";
  }
}

TEST_F(SentencePieceTest, EmptyTextHasNoTokensAndNoSpacePrefix) {
  EXPECT_EQ(*tokenizer().EncodeContent(""), std::vector<uint32_t>{});
  EXPECT_EQ(*tokenizer().EncodePrompt(""), std::vector<uint32_t>{1});
}

TEST_F(SentencePieceTest, DecodesPiecesBytesAndControls) {
  // 15043 = "▁Hello", 3186 = "▁world", 13 = <0x0A>, 1/2 = <s> </s>, 0 = <unk>.
  EXPECT_EQ(*tokenizer().TokenBytes(15043), " Hello");
  EXPECT_EQ(*tokenizer().TokenBytes(13), "\n");
  EXPECT_EQ(*tokenizer().TokenBytes(1), "");
  EXPECT_EQ(*tokenizer().TokenBytes(2), "");
  EXPECT_EQ(*tokenizer().TokenBytes(0), "");
  // The space the encoder prefixed goes at the start of the text: after BOS or
  // with nothing before; anywhere else the piece keeps it.
  EXPECT_EQ(*tokenizer().TokenBytesAfter(1, 15043), "Hello");
  EXPECT_EQ(*tokenizer().TokenBytesAfter(std::nullopt, 15043), "Hello");
  EXPECT_EQ(*tokenizer().TokenBytesAfter(3186, 15043), " Hello");
  EXPECT_EQ(*tokenizer().DecodeContentUtf8(std::vector<uint32_t>{1, 15043, 3186, 2}),
            "Hello world");
  Result<std::string_view> past_end = tokenizer().TokenBytes(32000, 7);
  ASSERT_FALSE(past_end);
  EXPECT_EQ(past_end.error().Debug(), "UnknownToken { position: 7, token_id: 32000 }");
}

// decode(encode(s)) == s holds for every test string: characters outside the
// vocabulary take byte tokens, which decode to their bytes. It fails for text
// holding "▁" itself (SpaceMarkIsNotRoundTripped) and for a truncated UTF-8
// character right before a space (TruncatedCharacterBeforeASpaceIsNotRoundTripped).
TEST_F(SentencePieceTest, RoundTripsEveryVocabularyTestString) {
  for (const testing::TokenizationCase& c : testing::ReadTokenizationCases(kSpmVocabulary)) {
    Result<std::vector<uint32_t>> ids = tokenizer().EncodeContent(c.text);
    ASSERT_TRUE(ids);
    EXPECT_EQ(*tokenizer().DecodeContent(*ids), c.text);
    Result<std::vector<uint32_t>> prompt = tokenizer().EncodePrompt(c.text);
    ASSERT_TRUE(prompt);
    EXPECT_EQ(*tokenizer().DecodeContent(*prompt), c.text);
  }
}

TEST_F(SentencePieceTest, SpaceMarkIsNotRoundTripped) {
  // U+2581 in the input is indistinguishable from an escaped space.
  Result<std::vector<uint32_t>> ids = tokenizer().EncodeContent(
      "a\xE2\x96\x81"
      "b");
  ASSERT_TRUE(ids);
  EXPECT_EQ(*tokenizer().DecodeContent(*ids), "a b");
}

TEST_F(SentencePieceTest, InvalidUtf8IsKeptByByteFallback) {
  const std::string text = "ok \x80\x80 x\xFF";  // stray continuations, a lead byte at the end
  Result<std::vector<uint32_t>> ids = tokenizer().EncodeContent(text);
  ASSERT_TRUE(ids);
  EXPECT_EQ(*tokenizer().DecodeContent(*ids), text);
}

// Characters are cut by their lead byte alone (as llama.cpp does), so a lead byte
// without its continuation bytes swallows the first byte of the "▁" after it; that
// "▁" then falls back to bytes and decodes as U+2581, not as a space.
TEST_F(SentencePieceTest, TruncatedCharacterBeforeASpaceIsNotRoundTripped) {
  Result<std::vector<uint32_t>> ids = tokenizer().EncodeContent("\xC3 b");
  ASSERT_TRUE(ids);
  EXPECT_EQ(*tokenizer().DecodeContent(*ids),
            "\xC3\xE2\x96\x81"
            "b");
}

// 100 KB of mixed text: the bigram queue makes this O(n log n); it takes a few
// tens of milliseconds in a Release build (a quadratic merge loop would take
// minutes), and ctest's default timeout would catch a regression.
TEST_F(SentencePieceTest, EncodesALongPrompt) {
  std::string text;
  uint64_t state = 12345;
  const char* words[] = {"the ",    "quick ", "brown ", "fox ", "jumps\n",       "über ",
                         "日本語 ", "42 ",    "   ",    "🦙", "tokenization ", ", "};
  while (text.size() < 100 * 1024) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    text += words[(state >> 33) % std::size(words)];
  }
  Result<std::vector<uint32_t>> ids = tokenizer().EncodeContent(text);
  ASSERT_TRUE(ids);
  EXPECT_GT(ids->size(), text.size() / 8);
  EXPECT_EQ(*tokenizer().DecodeContent(*ids), text);
}

}  // namespace
}  // namespace kvrt
