// The pre-tokenizer families on strings where their regexes part ways: digit
// runs, whitespace runs and Unicode whitespace, contractions, symbols beside
// letters, invalid UTF-8. Every expectation follows from llama.cpp's regex list
// for the name, run over the text with llama.cpp's code point classes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/codepoint_class.h"
#include "tokenizer/lenient_utf8.h"
#include "tokenizer/pretokenizer.h"

namespace kvrt::tokenizer {
namespace {

std::vector<std::string> Pieces(std::string_view pre, std::string_view text) {
  Result<PreTokenizer> splitter = PreTokenizer::ForName(pre);
  EXPECT_TRUE(splitter) << splitter.error().Debug();
  if (!splitter) return {};
  const std::optional<std::string> repaired = RepairUtf8(text);
  Result<std::vector<std::string_view>> pieces = splitter->Split(repaired ? *repaired : text);
  EXPECT_TRUE(pieces) << pieces.error().Debug();
  if (!pieces) return {};
  return std::vector<std::string>(pieces->begin(), pieces->end());
}

using P = std::vector<std::string>;

TEST(PreTokenizerTest, Llama3GroupsDigitsByThree) {
  EXPECT_EQ(Pieces("llama-bpe", "1234567 ab"), (P{"123", "456", "7", " ab"}));
  EXPECT_EQ(Pieces("llama-bpe", "I'M here, we'd"), (P{"I", "'M", " here", ",", " we", "'d"}));
  EXPECT_EQ(Pieces("llama-bpe", "a  \n\n b"), (P{"a", "  \n\n", " b"}));
  EXPECT_EQ(Pieces("llama-bpe", "x!!\n\ny"), (P{"x", "!!\n\n", "y"}));
}

TEST(PreTokenizerTest, Qwen2TakesOneDigitAtATime) {
  EXPECT_EQ(Pieces("qwen2", "1234567 ab"), (P{"1", "2", "3", "4", "5", "6", "7", " ab"}));
  EXPECT_EQ(Pieces("deepseek-r1-qwen", "x=42"), (P{"x", "=", "4", "2"}));
}

TEST(PreTokenizerTest, UnicodeWhitespaceIsWhitespace) {
  // NBSP and NEL are White_Space: an optional non-letter before a word, and
  // whitespace the regex's \s runs take.
  EXPECT_EQ(Pieces("llama-bpe", "x\u00A0y"), (P{"x", "\u00A0y"}));
  EXPECT_EQ(Pieces("llama-bpe", "x\u0085\u0085y"), (P{"x", "\u0085", "\u0085y"}));
  EXPECT_EQ(ClassOf(0x3000), CodepointClass::kWhitespace);
  EXPECT_EQ(ClassOf(0x200B), CodepointClass::kOther) << "a zero-width space is not White_Space";
}

TEST(PreTokenizerTest, SymbolsAndLettersOfOtherScripts) {
  EXPECT_EQ(ClassOf(U'é'), CodepointClass::kLetter);
  EXPECT_EQ(ClassOf(U'中'), CodepointClass::kLetter);
  EXPECT_EQ(ClassOf(U'٣'), CodepointClass::kNumber);
  EXPECT_EQ(ClassOf(U'。'), CodepointClass::kPunctuation);
  EXPECT_EQ(ClassOf(0x1F600), CodepointClass::kOther) << "an emoji is a symbol";
  EXPECT_EQ(ClassOf(0x0301), CodepointClass::kOther) << "a combining mark";
  EXPECT_EQ(ClassOf(0x110000), CodepointClass::kOther);
  // A symbol is the one non-letter a word may start with.
  EXPECT_EQ(Pieces("qwen2", "\U0001F600hi \U0001F600\U0001F600"),
            (P{"\U0001F600hi", " \U0001F600\U0001F600"}));
  EXPECT_EQ(Pieces("llama-bpe", "e\u0301t\u00E9"), (P{"e", "\u0301t\u00E9"}));
}

TEST(PreTokenizerTest, Gpt2LeavesALoneWhitespaceCharacterAlone) {
  EXPECT_EQ(Pieces("gpt-2", "Hello  world"), (P{"Hello", " ", " world"}));
  EXPECT_EQ(Pieces("gpt-2", "x\ty 12"), (P{"x", "\t", "y", " 12"}));
}

TEST(PreTokenizerTest, SmollmSplitsDigitsFirst) {
  EXPECT_EQ(Pieces("smollm", "abc123"), (P{"abc", "1", "2", "3"}));
  EXPECT_EQ(Pieces("smollm", " 12"), (P{" ", "1", "2"}));
  EXPECT_EQ(Pieces("gpt-2", " 12"), (P{" 12"}));
}

TEST(PreTokenizerTest, DefaultRunsLlamaCppsFourRegexes) {
  // Punctuation runs, GPT-2's regex, number runs, then three ASCII digits.
  EXPECT_EQ(Pieces("default", "Hello, world 12345!"),
            (P{"Hello", ",", " world", " ", "123", "45", "!"}));
  EXPECT_EQ(Pieces("", "Hello, world 12345!"), Pieces("default", "Hello, world 12345!"));
}

TEST(PreTokenizerTest, InvalidUtf8IsReadAsLlamaCppReadsIt) {
  EXPECT_EQ(*RepairUtf8("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(*RepairUtf8("\xC1\x81"), "A") << "an overlong form becomes its code point";
  EXPECT_EQ(RepairUtf8("plain \u00E9"), std::nullopt);
  // U+FFFD is a symbol, so it joins the word after it.
  EXPECT_EQ(Pieces("llama-bpe", "a\xFF" "b"), (P{"a", "\xEF\xBF\xBD" "b"}));
}

TEST(PreTokenizerTest, LongRunsSplitInLinearTime) {
  const std::string spaces(1 << 20, ' ');
  EXPECT_EQ(Pieces("llama-bpe", spaces + "x"), (P{spaces.substr(1), " x"}));
  const std::string digits(3 << 18, '7');
  EXPECT_EQ(Pieces("llama-bpe", digits).size(), size_t{1} << 18);
}

}  // namespace
}  // namespace kvrt::tokenizer
