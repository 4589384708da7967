// The llama2.c tokenizer: run.c's encoding rules one by one on handmade
// vocabularies, its decoding rules, the tokenizer.bin format with typed errors,
// and the synthetic vocabularies of kvrt synth.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "formats/llama2c/llama2c.h"
#include "kvrt/tokenizer.h"
#include "llama2c_test_support.h"

namespace kvrt {
namespace {

using testing::AppendF32;
using testing::AppendI32;

// <unk>, BOS, EOS, the 256 byte tokens, then `extra` pieces with their scores.
Tokenizer Vocabulary(const std::vector<std::pair<std::string, float>>& extra) {
  std::vector<std::string> pieces = {"<unk>", "\n<s>\n", "\n</s>\n"};
  std::vector<float> scores(3, 0.0f);
  for (int b = 0; b < 256; ++b) {
    char piece[8];
    std::snprintf(piece, sizeof piece, "<0x%02X>", b);
    pieces.push_back(piece);
    scores.push_back(0.0f);
  }
  for (const auto& [piece, score] : extra) {
    pieces.push_back(piece);
    scores.push_back(score);
  }
  Result<Tokenizer> tokenizer = Tokenizer::Llama2c(pieces, scores, 16);
  EXPECT_TRUE(tokenizer) << tokenizer.error().Debug();
  return std::move(*tokenizer);
}

constexpr uint32_t kFirst = 259;  // id of the first extra piece

std::vector<uint32_t> Encode(const Tokenizer& tokenizer, std::string_view text) {
  Result<std::vector<uint32_t>> ids = tokenizer.EncodeContent(text);
  EXPECT_TRUE(ids) << ids.error().Debug();
  return ids ? *ids : std::vector<uint32_t>{};
}

TEST(Llama2cTokenizerTest, EncodesLikeRunC) {
  // 259 " ", 260 "a", 261 "b", 262 "ab", 263 " a", 264 "é", 265 "ba"
  const Tokenizer t = Vocabulary({{" ", -100}, {"a", -100}, {"b", -100}, {"ab", -1}, {" a", -2}, {"é", -100}, {"ba", -1}});
  EXPECT_EQ(t.kind(), TokenizerKind::kLlama2c);
  EXPECT_EQ(t.kind_name(), "llama2c");
  EXPECT_EQ(t.bos_id(), 1u);
  EXPECT_EQ(t.eos_id(), 2u);
  // Empty text: no dummy prefix, no tokens.
  EXPECT_EQ(Encode(t, ""), std::vector<uint32_t>{});
  // The dummy prefix " " merges with "a" (score -2) once "ab" (-1) has merged first.
  EXPECT_EQ(Encode(t, "ab"), (std::vector<uint32_t>{kFirst, kFirst + 3}));
  EXPECT_EQ(Encode(t, "a"), (std::vector<uint32_t>{kFirst + 4}));
  // "ab" and "ba" score the same: the leftmost pair merges, and "ba" is gone with it.
  EXPECT_EQ(Encode(t, "aba"), (std::vector<uint32_t>{kFirst, kFirst + 3, kFirst + 1}));
  // A code point in the vocabulary is one token; one that is not falls back to bytes + 3.
  EXPECT_EQ(Encode(t, "é"), (std::vector<uint32_t>{kFirst, kFirst + 5}));
  EXPECT_EQ(Encode(t, "ü"), (std::vector<uint32_t>{kFirst, 0xC3 + 3, 0xBC + 3}));
  EXPECT_EQ(Encode(t, "z"), (std::vector<uint32_t>{kFirst, 'z' + 3}));
  // A stray continuation byte is looked up (and falls back) on its own.
  EXPECT_EQ(Encode(t, "\x80"), (std::vector<uint32_t>{kFirst, 0x80 + 3}));
  // The prompt form starts with BOS, the document form adds EOS.
  EXPECT_EQ(*t.EncodePrompt("a"), (std::vector<uint32_t>{1, kFirst + 4}));
  EXPECT_EQ(*t.EncodeDocument("a"), (std::vector<uint32_t>{1, kFirst + 4, 2}));
}

TEST(Llama2cTokenizerTest, ScoresAtOrBelowRunCsFloorNeverMerge) {
  const Tokenizer t = Vocabulary({{" ", 0}, {"a", 0}, {" a", -1e10f}});
  EXPECT_EQ(Encode(t, "a"), (std::vector<uint32_t>{kFirst, kFirst + 1}));
}

TEST(Llama2cTokenizerTest, DecodesLikeRunC) {
  const Tokenizer t = Vocabulary({{" Hello", -1}, {"!", -2}});
  // After BOS a piece loses its leading space; elsewhere it keeps it.
  EXPECT_EQ(*t.TokenBytesAfter(1, kFirst), "Hello");
  EXPECT_EQ(*t.TokenBytesAfter(kFirst + 1, kFirst), " Hello");
  EXPECT_EQ(*t.TokenBytesAfter(std::nullopt, kFirst), " Hello");
  // Raw-byte tokens are their byte, even a space after BOS.
  EXPECT_EQ(*t.TokenBytes('A' + 3), "A");
  EXPECT_EQ(*t.TokenBytesAfter(1, ' ' + 3), " ");
  EXPECT_EQ(*t.TokenBytes(0xFF + 3), std::string(1, '\xFF'));
  EXPECT_EQ(*t.DecodeContent(std::vector<uint32_t>{1, kFirst, kFirst + 1}), "\n<s>\nHello!");
  EXPECT_EQ(*t.DecodeDocumentUtf8(std::vector<uint32_t>{1, kFirst, kFirst + 1, 2}), "Hello!");
  EXPECT_EQ(t.DecodeDocumentUtf8(std::vector<uint32_t>{0, kFirst, 2}).error().code(), ErrorCode::kExpectedBos);
  EXPECT_EQ(t.TokenBytes(kFirst + 2).error().code(), ErrorCode::kUnknownToken);
}

TEST(Llama2cTokenizerTest, DocumentsRoundTripThroughTheFixtureTokenizer) {
  Result<Tokenizer> t = ReadLlama2cTokenizer(testing::FixturePath("llama2c/tokenizer.bin"));
  ASSERT_TRUE(t) << t.error().Debug();
  EXPECT_EQ(t->vocabulary_size(), 512u);
  EXPECT_EQ(t->max_token_length(), 16u);
  for (const std::string text : {"Once upon a time", "Ünïcödé — 日本語 ✓", "tabs\tand\nnewlines", ""}) {
    Result<std::vector<uint32_t>> document = t->EncodeDocument(text);
    ASSERT_TRUE(document);
    EXPECT_EQ(*t->DecodeDocumentUtf8(*document), text);
  }
  // The file is canonical: encoding the parsed tokenizer gives its bytes back.
  EXPECT_EQ(*EncodeLlama2cTokenizer(*t), testing::ReadBytes(testing::FixturePath("llama2c/tokenizer.bin")));
}

TEST(Llama2cTokenizerTest, TheFileMustMatchTheModelsVocabulary) {
  const std::string path = testing::FixturePath("llama2c/tokenizer.bin");
  EXPECT_TRUE(LoadLlama2cTokenizer(path, 512));
  const Result<Tokenizer> mismatch = LoadLlama2cTokenizer(path, 500);
  ASSERT_FALSE(mismatch);
  EXPECT_EQ(mismatch.error().code(), ErrorCode::kVocabularyMismatch);
  EXPECT_EQ(mismatch.error().U64("tokenizer"), 512u);
  EXPECT_EQ(mismatch.error().U64("decoder"), 500u);
  EXPECT_EQ(LoadLlama2cTokenizer(path + ".absent", 512).error().code(), ErrorCode::kIo);
}

std::vector<uint8_t> TokenizerFile(int32_t max_length, size_t tokens) {
  std::vector<uint8_t> out;
  AppendI32(out, max_length);
  for (size_t id = 0; id < tokens; ++id) {
    std::string piece = id < 3 ? "<c" + std::to_string(id) + ">" : "<0x00>";
    if (id >= 3 && id < 259) {
      char text[8];
      std::snprintf(text, sizeof text, "<0x%02X>", static_cast<unsigned>(id - 3));
      piece = text;
    } else if (id >= 259) {
      piece = "p" + std::to_string(id);
    }
    AppendF32(out, 0.0f);
    AppendI32(out, static_cast<int32_t>(piece.size()));
    out.insert(out.end(), piece.begin(), piece.end());
  }
  return out;
}

TEST(Llama2cTokenizerTest, FileErrorsAreTyped) {
  ASSERT_TRUE(ParseLlama2cTokenizer(TokenizerFile(16, 300)));
  auto code = [](const std::vector<uint8_t>& bytes) { return ParseLlama2cTokenizer(bytes).error().code(); };
  EXPECT_EQ(code({}), ErrorCode::kTruncated);
  EXPECT_EQ(code({1, 0}), ErrorCode::kTruncated);
  for (int32_t bad : {0, -1, std::numeric_limits<int32_t>::max()}) {
    EXPECT_EQ(code(TokenizerFile(bad, 300)), ErrorCode::kInvalidHeaderValue) << bad;
  }
  std::vector<uint8_t> bytes = TokenizerFile(16, 300);
  EXPECT_EQ(code(std::vector<uint8_t>(bytes.begin(), bytes.end() - 1)), ErrorCode::kTruncated);
  EXPECT_EQ(code(std::vector<uint8_t>(bytes.begin(), bytes.end() - 7)), ErrorCode::kTruncated);
  // Record 0's length: negative, longer than max_token_length, past the file.
  for (int32_t length : {-1, 17, std::numeric_limits<int32_t>::max()}) {
    std::vector<uint8_t> hostile = bytes;
    std::memcpy(&hostile[8], &length, 4);
    const Result<Tokenizer> parsed = ParseLlama2cTokenizer(hostile);
    ASSERT_FALSE(parsed);
    EXPECT_EQ(parsed.error().code(), ErrorCode::kInvalidTokenLength) << length;
    EXPECT_EQ(parsed.error().U64("token_id"), 0u);
  }
  // Too few tokens for the byte fallback, and a byte token out of place.
  EXPECT_EQ(code(TokenizerFile(16, 258)), ErrorCode::kMissingByteTokens);
  std::vector<uint8_t> shuffled = bytes;
  shuffled[4 + 3 * 12 + 8 + 3] = '1';  // "<0x00>" of id 3 becomes "<0x10>"
  EXPECT_EQ(code(shuffled), ErrorCode::kMissingByteTokens);
  // A NaN score.
  std::vector<uint8_t> nan = bytes;
  const float value = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(&nan[4], &value, 4);
  EXPECT_EQ(code(nan), ErrorCode::kNonFiniteScore);
}

TEST(Llama2cTokenizerTest, SyntheticVocabulariesAreDeterministicAndComplete) {
  Result<Tokenizer> a = SyntheticLlama2cTokenizer(2000, 9), b = SyntheticLlama2cTokenizer(2000, 9);
  Result<Tokenizer> c = SyntheticLlama2cTokenizer(2000, 10);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->vocabulary_size(), 2000u);
  EXPECT_EQ(a->pieces(), b->pieces());
  EXPECT_EQ(a->scores(), b->scores());
  EXPECT_NE(a->pieces(), c->pieces());
  EXPECT_EQ(a->pieces()[1], "\n<s>\n");
  EXPECT_EQ(a->pieces()[3 + 'A'], "<0x41>");
  // Round trip through the file form.
  Result<Tokenizer> parsed = ParseLlama2cTokenizer(*EncodeLlama2cTokenizer(*a));
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->pieces(), a->pieces());
  // Merges make text shorter than its characters.
  const std::string text = "the quick brown fox jumps over the lazy dog";
  EXPECT_LT(a->EncodeContent(text)->size(), text.size());
  EXPECT_EQ(SyntheticLlama2cTokenizer(258, 0).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(SyntheticLlama2cTokenizer(259, 0));
}

}  // namespace
}  // namespace kvrt
