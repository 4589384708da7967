// Tokenizer::FromVocabulary on small hand-made vocabularies: every typed error a
// malformed GGUF vocabulary gets, and the merge order of both algorithms where a
// real vocabulary never shows it plainly (ties, ranks, missing tokens).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "kvrt/tokenizer.h"
#include "tokenizer/vocabulary.h"
#include "tokenizer/tokenizer_impl.h"

namespace kvrt {
namespace {

// A SentencePiece vocabulary: <unk>, <s>, </s>, the 256 byte tokens, then `extra`
// normal pieces with their scores.
VocabularyData Spm(std::vector<std::pair<std::string, float>> extra) {
  VocabularyData data;
  data.model = "llama";
  data.tokens = {"<unk>", "<s>", "</s>"};
  data.token_types = {2, 3, 3};
  for (int byte = 0; byte < 256; ++byte) {
    char piece[8];
    std::snprintf(piece, sizeof(piece), "<0x%02X>", byte);
    data.tokens.push_back(piece);
    data.token_types.push_back(6);
  }
  for (auto& [piece, score] : extra) {
    data.tokens.push_back(piece);
    data.token_types.push_back(1);
  }
  data.scores.assign(data.tokens.size(), 0.0f);
  for (size_t i = 0; i < extra.size(); ++i) data.scores[259 + i] = extra[i].second;
  data.bos = 1;
  data.eos = 2;
  data.unk = 0;
  return data;
}

// A GPT-2 vocabulary: the 256 byte-level characters in byte order (so token b
// spells byte b), then `extra` tokens, and the merges.
VocabularyData Gpt2(std::vector<std::string> extra, std::vector<std::string> merges) {
  VocabularyData data;
  data.model = "gpt2";
  data.pre = "gpt-2";
  uint32_t next_shifted = 256;  // GPT-2 moves unprintable bytes to U+0100..
  for (int byte = 0; byte < 256; ++byte) {
    const bool printable =
        (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
    const uint32_t cp = printable ? byte : next_shifted++;
    std::string utf8;
    if (cp < 0x80) {
      utf8 += static_cast<char>(cp);
    } else {
      utf8 += static_cast<char>(0xC0 | (cp >> 6));
      utf8 += static_cast<char>(0x80 | (cp & 0x3F));
    }
    data.tokens.push_back(utf8);
  }
  for (std::string& token : extra) data.tokens.push_back(std::move(token));
  data.merges = std::move(merges);
  return data;
}

std::string DebugOf(Result<Tokenizer> result) {
  return result ? std::string("Ok") : result.error().Debug();
}

std::vector<uint32_t> Encode(const Tokenizer& tokenizer, std::string_view text) {
  Result<std::vector<uint32_t>> ids = tokenizer.EncodeContent(text);
  EXPECT_TRUE(ids) << ids.error().Debug();
  return ids ? *ids : std::vector<uint32_t>{};
}

TEST(VocabularyValidationTest, RejectsUnknownModelsAndPreTokenizers) {
  VocabularyData data = Spm({});
  data.model = "bert";
  EXPECT_EQ(DebugOf(TokenizerFromVocabulary(data)),
            "UnsupportedTokenizerModel { model: \"bert\" }");
  VocabularyData gpt2 = Gpt2({}, {});
  gpt2.pre = "tekken";
  Result<Tokenizer> tekken = TokenizerFromVocabulary(gpt2);
  EXPECT_EQ(DebugOf(tekken), "UnsupportedPreTokenizer { pre: \"tekken\" }");
  ASSERT_FALSE(tekken);
  // The message names every supported pre-tokenizer.
  for (const char* named : {"llama-bpe", "qwen2", "smollm", "deepseek-r1-qwen", "gpt-2", "default"}) {
    EXPECT_NE(tekken.error().message().find(named), std::string::npos) << tekken.error().message();
  }
  for (const char* pre : {"", "default", "gpt-2", "llama3", "llama-bpe", "qwen2", "smollm",
                          "deepseek-r1-qwen", "falcon3", "stablelm2", "command-r"}) {
    gpt2.pre = pre;
    EXPECT_EQ(DebugOf(TokenizerFromVocabulary(gpt2)), "Ok") << pre;
  }
}

TEST(VocabularyValidationTest, RejectsInconsistentTables) {
  VocabularyData empty;
  empty.model = "gpt2";
  EXPECT_EQ(DebugOf(TokenizerFromVocabulary(empty)), "EmptyVocabulary");

  VocabularyData scores = Spm({});
  scores.scores.pop_back();
  EXPECT_EQ(DebugOf(TokenizerFromVocabulary(scores)),
            "InvalidArgument { vocabulary_size: 259, count: 258 }");

  VocabularyData types = Spm({});
  types.token_types.push_back(1);
  EXPECT_EQ(DebugOf(TokenizerFromVocabulary(types)),
            "InvalidArgument { vocabulary_size: 259, count: 260 }");

  VocabularyData bad_type = Spm({});
  bad_type.token_types[5] = 7;
  EXPECT_EQ(DebugOf(TokenizerFromVocabulary(bad_type)),
            "InvalidTokenType { token_id: 5, token_type: 7 }");

  VocabularyData nan = Spm({});
  nan.scores[4] = std::nanf("");
  EXPECT_EQ(DebugOf(TokenizerFromVocabulary(nan)), "NonFiniteScore { token_id: 4 }");

  VocabularyData bos = Spm({});
  bos.bos = 259;
  EXPECT_EQ(DebugOf(TokenizerFromVocabulary(bos)),
            "SpecialTokenOutOfRange { role: \"BOS\", token_id: 259, vocabulary_size: 259 }");
}

TEST(VocabularyValidationTest, SentencePieceNeedsAFallbackForEveryByte) {
  VocabularyData misspelled = Spm({});
  misspelled.tokens[3 + 0x41] = "<0xG1>";
  EXPECT_EQ(DebugOf(TokenizerFromVocabulary(misspelled)), "InvalidByteToken { token_id: 68 }");

  // Without <0x41> the one-byte piece "A" takes its place; without either, <unk>.
  VocabularyData no_byte = Spm({{"A", -1.0f}});
  no_byte.tokens[3 + 0x41] = "<unused>";
  no_byte.token_types[3 + 0x41] = 5;
  Result<Tokenizer> with_piece = TokenizerFromVocabulary(no_byte);
  ASSERT_TRUE(with_piece);
  no_byte.tokens.pop_back();
  no_byte.scores.pop_back();
  no_byte.token_types.pop_back();
  Result<Tokenizer> with_unk = TokenizerFromVocabulary(no_byte);
  ASSERT_TRUE(with_unk);
  EXPECT_EQ(Encode(*with_unk, "A"), (std::vector<uint32_t>{3 + 0xE2, 3 + 0x96, 3 + 0x81, 0}));
  no_byte.unk.reset();
  EXPECT_EQ(DebugOf(TokenizerFromVocabulary(no_byte)),
            "MissingByteTokens { byte: 65, vocabulary_size: 259 }");
}

TEST(VocabularyValidationTest, Gpt2MergesMustNameTokens) {
  EXPECT_EQ(DebugOf(TokenizerFromVocabulary(Gpt2({}, {"ab"}))), "MalformedMerge { rank: 0 }");
  EXPECT_EQ(DebugOf(TokenizerFromVocabulary(Gpt2({}, {"a b", "ab c"}))),
            "UnknownMergeOperand { rank: 1, operand: \"ab\" }");
}

// SentencePiece merges the highest-scoring pair first and the leftmost of equal
// scores; merges only pairs that are pieces.
TEST(SentencePieceOrderTest, HighestScoreThenLeftmost) {
  // "▁" = 259, "a" = 260, "aa" = 261, "▁a" = 262.
  Result<Tokenizer> t = TokenizerFromVocabulary(Spm({{"\xE2\x96\x81", -5},
                                                       {"a", -5},
                                                       {"aa", -1},
                                                       {"\xE2\x96\x81"
                                                        "a",
                                                        -2}}));
  ASSERT_TRUE(t) << t.error().Debug();
  // "▁aaa": "aa" (score -1) beats "▁a" (-2); of the two "aa" pairs the left one wins.
  EXPECT_EQ(Encode(*t, "aaa"), (std::vector<uint32_t>{259, 261, 260}));
  Result<Tokenizer> tie = TokenizerFromVocabulary(Spm({{"\xE2\x96\x81", -5},
                                                         {"a", -5},
                                                         {"aa", -2},
                                                         {"\xE2\x96\x81"
                                                          "a",
                                                          -2}}));
  ASSERT_TRUE(tie);
  // Equal scores: the leftmost pair, "▁a", goes first.
  EXPECT_EQ(Encode(*tie, "aaa"), (std::vector<uint32_t>{262, 261}));
  // add_space_prefix = false: no "▁" in front.
  VocabularyData plain = Spm({{"\xE2\x96\x81", -5}, {"a", -5}, {"aa", -1}});
  plain.add_space_prefix = false;
  Result<Tokenizer> no_prefix = TokenizerFromVocabulary(plain);
  ASSERT_TRUE(no_prefix);
  EXPECT_EQ(Encode(*no_prefix, "aa a"), (std::vector<uint32_t>{261, 259, 260}));
  EXPECT_EQ(*no_prefix->DecodeContent(Encode(*no_prefix, "aa a")), "aa a");
}

// Byte-level BPE applies the lowest rank first, the leftmost on equal ranks.
TEST(ByteLevelBpeOrderTest, LowestRankThenLeftmost) {
  // 256 = "ab", 257 = "bc", 258 = "abc".
  Result<Tokenizer> t =
      TokenizerFromVocabulary(Gpt2({"ab", "bc", "abc"}, {"b c", "a b", "ab c"}));
  ASSERT_TRUE(t) << t.error().Debug();
  // "b c" has rank 0, so "abc" is a + bc, and "a bc" is no merge.
  EXPECT_EQ(Encode(*t, "abc"), (std::vector<uint32_t>{'a', 257}));
  Result<Tokenizer> u =
      TokenizerFromVocabulary(Gpt2({"ab", "bc", "abc"}, {"a b", "b c", "ab c"}));
  ASSERT_TRUE(u);
  EXPECT_EQ(Encode(*u, "abc"), (std::vector<uint32_t>{258}));
  // A merge whose result is not a token leaves the one-byte tokens of its spelling.
  Result<Tokenizer> v = TokenizerFromVocabulary(Gpt2({}, {"a b"}));
  ASSERT_TRUE(v);
  EXPECT_EQ(Encode(*v, "ab"), (std::vector<uint32_t>{'a', 'b'}));
  // Merging stays inside a pre-token: " abc" is "Ġ" (byte 0x20) and then "abc".
  EXPECT_EQ(Encode(*u, "abc abc"), (std::vector<uint32_t>{258, ' ', 258}));
}

}  // namespace
}  // namespace kvrt

namespace kvrt {
namespace {

// Marks the last `count` tokens of `data` user-defined (type 4).
void MakeUserDefined(VocabularyData& data, size_t count) {
  data.token_types.resize(data.tokens.size(), 1);
  for (size_t i = data.tokens.size() - count; i < data.tokens.size(); ++i) data.token_types[i] = 4;
}

// User-defined tokens are cut out of the text before encoding (llama.cpp does so
// even when special-token text is plain text); SentencePiece prefixes a space to
// every raw fragment, since each follows the start or a special token.
TEST(SpecialTokenTest, SentencePieceSplitsBeforeEncoding) {
  // "▁" = 259, "a" = 260, "▁a" = 261, then user-defined "<|x|>" = 262.
  VocabularyData data = Spm({{"\xE2\x96\x81", -5}, {"a", -5}, {"\xE2\x96\x81" "a", -1}, {"<|x|>", 0}});
  MakeUserDefined(data, 1);
  Result<Tokenizer> t = TokenizerFromVocabulary(data);
  ASSERT_TRUE(t) << t.error().Debug();
  EXPECT_EQ(Encode(*t, "a<|x|>a"), (std::vector<uint32_t>{261, 262, 261}));
  EXPECT_EQ(Encode(*t, "<|x|><|x|>"), (std::vector<uint32_t>{262, 262}));
  EXPECT_EQ(Encode(*t, "<|x|"), (std::vector<uint32_t>{259, 3 + '<', 3 + '|', 3 + 'x', 3 + '|'}))
      << "an incomplete token is plain text (byte fallback here)";
  // Decoding gives the token's text verbatim; the fragment after it keeps its space.
  EXPECT_EQ(*t->DecodeContent(Encode(*t, "a<|x|>a")), "a<|x|> a");
}

TEST(SpecialTokenTest, LongestTokenSplitsFirst) {
  // 256 "ab", 257 "bcd" (user-defined), 258 "ab" would merge but "bcd" wins first.
  VocabularyData data = Gpt2({"ab", "bcd"}, {"a b"});
  MakeUserDefined(data, 1);
  Result<Tokenizer> t = TokenizerFromVocabulary(data);
  ASSERT_TRUE(t) << t.error().Debug();
  EXPECT_EQ(Encode(*t, "abcd"), (std::vector<uint32_t>{'a', 257}));
  EXPECT_EQ(Encode(*t, "ab bcdab"), (std::vector<uint32_t>{256, ' ', 257, 256}));
  EXPECT_EQ(*t->DecodeContent(Encode(*t, "ab bcdab")), "ab bcdab");
  // Both user-defined: the longer is matched first even where the shorter starts earlier.
  VocabularyData both = Gpt2({"ab", "bcd"}, {});
  MakeUserDefined(both, 2);
  Result<Tokenizer> u = TokenizerFromVocabulary(both);
  ASSERT_TRUE(u);
  EXPECT_EQ(Encode(*u, "abcd"), (std::vector<uint32_t>{'a', 257}));
  EXPECT_EQ(Encode(*u, "abab"), (std::vector<uint32_t>{256, 256}));
}

TEST(SpecialTokenTest, Phi3StripsWhitespaceRightOfThem) {
  // Not "<|end|>": llama.cpp makes every token spelled like an end of turn a
  // control token, which plain text no longer matches.
  VocabularyData data = Gpt2({"<|user|>"}, {});
  MakeUserDefined(data, 1);
  data.name = "Phi3";
  Result<Tokenizer> phi = TokenizerFromVocabulary(data);
  ASSERT_TRUE(phi);
  EXPECT_EQ(Encode(*phi, "a <|user|> \n b"), (std::vector<uint32_t>{'a', ' ', 256, 'b'}));
  data.name = "other";
  Result<Tokenizer> other = TokenizerFromVocabulary(data);
  ASSERT_TRUE(other);
  EXPECT_EQ(Encode(*other, "a <|user|> b"), (std::vector<uint32_t>{'a', ' ', 256, ' ', 'b'}));
}

}  // namespace
}  // namespace kvrt
