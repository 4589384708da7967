// The GGUF byte-level BPE tokenizer (tokenizer.ggml.model "gpt2", pre "gpt-2")
// against llama.cpp: the 46 test strings of ggml-vocab-gpt-2.gguf, decoding and
// the round trip.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kvrt/tokenizer.h"
#include "test_support.h"
#include "tokenizer/vocabulary_for_test.h"

namespace kvrt {
namespace {

const std::string kGpt2Vocabulary = testing::FixturePath("gguf/vocab/ggml-vocab-gpt-2.gguf");

// The vocabulary is read once for the whole suite (testing::SharedTokenizer).
class Gpt2BpeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tokenizer_ = testing::SharedTokenizer(kGpt2Vocabulary);
    ASSERT_NE(tokenizer_, nullptr) << "could not read the vocabulary of " << kGpt2Vocabulary;
  }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const Tokenizer* tokenizer_ = nullptr;
};

TEST_F(Gpt2BpeTest, DescribesItself) {
  EXPECT_EQ(tokenizer().kind(), TokenizerKind::kGpt2Bpe);
  EXPECT_EQ(tokenizer().kind_name(), "gpt2-bpe");
  EXPECT_EQ(tokenizer().vocabulary_size(), 50257u);
  EXPECT_EQ(tokenizer().bos_id(), 50256u);
  EXPECT_EQ(tokenizer().eos_id(), 50256u);
  EXPECT_FALSE(tokenizer().add_bos());  // keys absent: llama.cpp's GPT-2 defaults
  EXPECT_FALSE(tokenizer().add_eos());
}

TEST_F(Gpt2BpeTest, MatchesLlamaCppOnEveryVocabularyTestString) {
  const std::vector<testing::TokenizationCase> cases =
      testing::ReadTokenizationCases(kGpt2Vocabulary);
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

TEST_F(Gpt2BpeTest, RoundTripsEveryVocabularyTestString) {
  for (const testing::TokenizationCase& c : testing::ReadTokenizationCases(kGpt2Vocabulary)) {
    Result<std::vector<uint32_t>> ids = tokenizer().EncodeContent(c.text);
    ASSERT_TRUE(ids);
    EXPECT_EQ(*tokenizer().DecodeContentUtf8(*ids), c.text);
    // No BOS by default: the prompt is the content.
    EXPECT_EQ(*tokenizer().EncodePrompt(c.text), *ids);
  }
}

TEST_F(Gpt2BpeTest, SpecialTokenTextIsPlainText) {
  Result<std::vector<uint32_t>> ids = tokenizer().EncodeContent("<|endoftext|>");
  ASSERT_TRUE(ids);
  EXPECT_GT(ids->size(), 1u);
  EXPECT_EQ(*tokenizer().DecodeContent(*ids), "<|endoftext|>");
  // The control token itself decodes to nothing.
  EXPECT_EQ(*tokenizer().TokenBytes(50256), "");
}

TEST_F(Gpt2BpeTest, DecodesByteLevelSpellings) {
  // 220 = "Ġ" (a space), 198 = "Ċ" (a newline), 15496 = "Hello".
  EXPECT_EQ(*tokenizer().TokenBytes(220), " ");
  EXPECT_EQ(*tokenizer().TokenBytes(198), "\n");
  EXPECT_EQ(*tokenizer().TokenBytes(15496), "Hello");
  // Unlike SentencePiece, no space is dropped at the start.
  EXPECT_EQ(*tokenizer().TokenBytesAfter(std::nullopt, 220), " ");
}

// Invalid UTF-8 is repaired the way llama.cpp reads it: each unreadable byte
// becomes U+FFFD, so the round trip gives the repaired text.
TEST_F(Gpt2BpeTest, InvalidUtf8BecomesReplacementCharacters) {
  Result<std::vector<uint32_t>> ids = tokenizer().EncodeContent(
      "a\xFF"
      "b\xE2\x82");
  ASSERT_TRUE(ids);
  EXPECT_EQ(*tokenizer().DecodeContent(*ids),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD\xEF\xBF\xBD");
}

// 100 KB of mixed text, a 100 KB word and 100 KB of spaces: pieces are merged
// with a rank queue, O(n log n), a few tens of milliseconds in a Release build.
TEST_F(Gpt2BpeTest, EncodesLongPrompts) {
  std::string text;
  uint64_t state = 12345;
  const char* words[] = {"the ", "quick ", "brown ", "fox ",          "jumps\n", "über ", "日本語 ",
                         "42 ",  "   ",    "🦙",   "tokenization ", ", ",      "I'll "};
  while (text.size() < 100 * 1024) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    text += words[(state >> 33) % std::size(words)];
  }
  for (const std::string& prompt :
       {text, std::string(100 * 1024, 'a'), std::string(100 * 1024, ' ') + "x"}) {
    Result<std::vector<uint32_t>> ids = tokenizer().EncodeContent(prompt);
    ASSERT_TRUE(ids) << ids.error().Debug();
    EXPECT_EQ(*tokenizer().DecodeContent(*ids), prompt);
  }
}

}  // namespace
}  // namespace kvrt
