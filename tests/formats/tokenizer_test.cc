// The byte-BPE tokenizer of ch39_trained.ckpt against every example in
// fixtures/checkpoints/ch39_trained.txt (encodings, decodings and their exact
// error variants), plus the literal tokenizer and construction errors.
#include "kvrt/tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "formats_test_support.h"
#include "formats/llmcp35/checkpoint.h"
#include "core/rust_format.h"

namespace kvrt {
namespace {

std::vector<uint32_t> Ids(const std::string& list) {
  std::vector<uint32_t> ids;
  for (const double value : testing::ParseList(list)) ids.push_back(static_cast<uint32_t>(value));
  return ids;
}

// The text between `key=` and the next " <word>=" (or the end of the line).
std::string Field(const std::string& line, const std::string& key, const std::string& next = "") {
  const size_t begin = line.find(key + "=");
  if (begin == std::string::npos) return "<missing " + key + ">";
  const size_t start = begin + key.size() + 1;
  const size_t end = next.empty() ? std::string::npos : line.find(" " + next + "=", start);
  return line.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// "Ok(hex:...)" / "Ok(\"...\")" / "Err(Debug)" for a bytes result.
std::string ShowBytes(const Result<std::string>& result) {
  return result ? "Ok(hex:" + testing::HexOf(*result) + ")" : "Err(" + result.error().Debug() + ")";
}
std::string ShowText(const Result<std::string>& result) {
  return result ? "Ok(" + RustQuoted(*result) + ")" : "Err(" + result.error().Debug() + ")";
}

class Ch39TokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<Checkpoint> checkpoint =
        LoadCheckpoint(testing::FixturePath("checkpoints/ch39_trained.ckpt"));
    ASSERT_TRUE(checkpoint) << checkpoint.error().Debug();
    tokenizer_ = checkpoint->tokenizer;
    lines_ =
        testing::Lines(testing::ReadText(testing::FixturePath("checkpoints/ch39_trained.txt")));
  }

  std::vector<std::string> LinesStartingWith(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const std::string& line : lines_) {
      if (line.rfind(prefix, 0) == 0) out.push_back(line);
    }
    return out;
  }

  Tokenizer tokenizer_;
  std::vector<std::string> lines_;
};

TEST_F(Ch39TokenizerTest, LayoutAndMergesMatch) {
  EXPECT_EQ(tokenizer_.kind_name(), "byte-bpe");
  EXPECT_EQ(tokenizer_.vocabulary_size(), 266u);
  const std::vector<std::string> merges = LinesStartingWith("  merge rank ");
  ASSERT_EQ(merges.size(), 8u);
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto [left, right] = tokenizer_.merges()[rank];
    EXPECT_NE(merges[rank].find("training pair (" + std::to_string(left) + "," +
                                std::to_string(right) + ")"),
              std::string::npos)
        << merges[rank];
    const uint32_t id = static_cast<uint32_t>(258 + rank);
    const Result<std::string_view> bytes = tokenizer_.TokenBytes(id);
    ASSERT_TRUE(bytes);
    EXPECT_NE(merges[rank].find("content id " + std::to_string(id) + " = bytes " +
                                testing::HexOf(*bytes)),
              std::string::npos)
        << merges[rank];
  }
}

TEST_F(Ch39TokenizerTest, EveryEncodingExampleMatches) {
  const std::vector<std::string> examples = LinesStartingWith("  text=");
  ASSERT_EQ(examples.size(), 8u);
  for (const std::string& line : examples) {
    SCOPED_TRACE(line);
    const std::string text = testing::BytesFromHex(Field(line, "utf8_hex", "content_ids"));
    const Result<std::vector<uint32_t>> content = tokenizer_.EncodeContent(text);
    ASSERT_TRUE(content) << content.error().Debug();
    EXPECT_EQ(*content, Ids(Field(line, "content_ids", "document_ids")));
    const Result<std::vector<uint32_t>> document = tokenizer_.EncodeDocument(text);
    ASSERT_TRUE(document) << document.error().Debug();
    EXPECT_EQ(*document, Ids(Field(line, "document_ids")));
    // Both encodings decode back to the exact text.
    const Result<std::string> round_trip = tokenizer_.DecodeDocumentUtf8(*document);
    ASSERT_TRUE(round_trip) << round_trip.error().Debug();
    EXPECT_EQ(*round_trip, text);
  }
}

TEST_F(Ch39TokenizerTest, EveryContentDecodingExampleMatches) {
  const std::vector<std::string> examples = LinesStartingWith("  ids=");
  ASSERT_EQ(examples.size(), 13u);
  for (const std::string& line : examples) {
    SCOPED_TRACE(line);
    const std::vector<uint32_t> ids = Ids(Field(line, "ids", "decode_content"));
    EXPECT_EQ(ShowBytes(tokenizer_.DecodeContent(ids)),
              Field(line, "decode_content", "decode_content_utf8"));
    EXPECT_EQ(ShowText(tokenizer_.DecodeContentUtf8(ids)), Field(line, "decode_content_utf8"));
  }
}

TEST_F(Ch39TokenizerTest, EveryDocumentDecodingExampleMatches) {
  const std::vector<std::string> examples = LinesStartingWith("  document=");
  ASSERT_EQ(examples.size(), 6u);
  for (const std::string& line : examples) {
    SCOPED_TRACE(line);
    const std::vector<uint32_t> ids = Ids(Field(line, "document", "decode_document_utf8"));
    EXPECT_EQ(ShowText(tokenizer_.DecodeDocumentUtf8(ids)), Field(line, "decode_document_utf8"));
  }
}

TEST_F(Ch39TokenizerTest, CapstoneGenerationDecodesLikeThePipeline) {
  const std::vector<uint32_t> generated = {260, 34, 34};
  const Result<std::string> text = tokenizer_.DecodeContentUtf8(generated);
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "т  ");
}

TEST_F(Ch39TokenizerTest, ErrorsCarryReferenceMessagesAndPositions) {
  const std::vector<uint32_t> unknown_then_control = {266, 0};
  Result<std::string> result = tokenizer_.DecodeContent(unknown_then_control);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().Debug(), "ControlTokenInContent { position: 1, token_id: 0 }");
  EXPECT_EQ(result.error().message(), "control token 0 is not allowed in content at position 1");

  const std::vector<uint32_t> document_with_unknown = {0, 67, 266, 1};
  result = tokenizer_.DecodeDocumentUtf8(document_with_unknown);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().Debug(), "UnknownToken { position: 2, token_id: 266 }");
  EXPECT_EQ(result.error().message(),
            "token 266 at position 2 is outside this tokenizer vocabulary");

  const std::vector<uint32_t> lone_lead = {258};
  result = tokenizer_.DecodeContentUtf8(lone_lead);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message(), "decoded bytes are not valid UTF-8 at byte 1");

  const std::vector<uint32_t> empty;
  result = tokenizer_.DecodeDocumentUtf8(empty);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().Debug(), "DocumentTooShort { length: 0 }");
  EXPECT_EQ(result.error().message(),
            "document token sequence of length 0 cannot contain BOS and EOS");

  const std::vector<uint32_t> bad_eos = {0, 100, 0};
  result = tokenizer_.DecodeDocumentUtf8(bad_eos);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message(), "expected EOS token 1, found 0 at the final position");

  const std::vector<uint32_t> interior = {0, 1, 1};
  result = tokenizer_.DecodeDocumentUtf8(interior);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().Debug(), "InteriorControlToken { position: 1, token_id: 1 }");
  EXPECT_EQ(result.error().message(), "document control token 1 is not allowed at position 1");

  const Result<std::string_view> control = tokenizer_.TokenBytes(1, 7);
  ASSERT_FALSE(control);
  EXPECT_EQ(control.error().Debug(), "ControlTokenInContent { position: 7, token_id: 1 }");
}

TEST_F(Ch39TokenizerTest, EveryByteRoundTrips) {
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes += static_cast<char>(b);
  for (const std::string& bytes : {all_bytes, std::string("line one\n\0Cyrillic: \xd1\x82\n", 23),
                                   std::string(), std::string("aaaa bee  е е")}) {
    const Result<std::vector<uint32_t>> content = tokenizer_.EncodeContent(bytes);
    ASSERT_TRUE(content);
    const Result<std::string> decoded = tokenizer_.DecodeContent(*content);
    ASSERT_TRUE(decoded);
    EXPECT_EQ(*decoded, bytes);
  }
}

TEST(ByteBpeTest, OnePassPerRankInRankOrder) {
  // (a,b) then (ab,c): "abc" -> [258, 101] -> [259].
  Result<Tokenizer> chained = Tokenizer::ByteBpe({{97, 98}, {256, 99}});
  ASSERT_TRUE(chained);
  EXPECT_EQ(chained->vocabulary_size(), 260u);
  EXPECT_EQ(*chained->EncodeContent("abc"), (std::vector<uint32_t>{259}));
  // Each position is consumed once per pass: "aaa" with (a,a) gives [aa, a].
  Result<Tokenizer> doubled = Tokenizer::ByteBpe({{97, 97}});
  ASSERT_TRUE(doubled);
  EXPECT_EQ(*doubled->EncodeContent("aaa"), (std::vector<uint32_t>{258, 99}));
  EXPECT_EQ(*doubled->EncodeContent("aaaa"), (std::vector<uint32_t>{258, 258}));
  // No merges: bytes only.
  Result<Tokenizer> bytes_only = Tokenizer::ByteBpe({});
  ASSERT_TRUE(bytes_only);
  EXPECT_EQ(bytes_only->vocabulary_size(), 258u);
  EXPECT_EQ(*bytes_only->EncodeContent(std::string("\0\xff", 2)), (std::vector<uint32_t>{2, 257}));
  EXPECT_EQ(*bytes_only->EncodeDocument(""), (std::vector<uint32_t>{0, 1}));
}

TEST(ByteBpeTest, RejectsUnknownOperandsAndDuplicatePairs) {
  Result<Tokenizer> self = Tokenizer::ByteBpe({{256, 97}});
  ASSERT_FALSE(self);
  EXPECT_EQ(self.error().Debug(), "UnknownMergeOperand { rank: 0, token_id: 256 }");
  EXPECT_EQ(self.error().message(), "merge rank 0 references unavailable training token 256");

  Result<Tokenizer> right = Tokenizer::ByteBpe({{97, 98}, {97, 300}});
  ASSERT_FALSE(right);
  EXPECT_EQ(right.error().Debug(), "UnknownMergeOperand { rank: 1, token_id: 300 }");

  Result<Tokenizer> duplicate = Tokenizer::ByteBpe({{97, 98}, {97, 98}});
  ASSERT_FALSE(duplicate);
  EXPECT_EQ(duplicate.error().Debug(), "DuplicateMergePair { rank: 1, left: 97, right: 98 }");
  EXPECT_EQ(duplicate.error().message(), "merge rank 1 repeats training pair (97,98)");
}

TEST(ByteBpeTest, ExponentialExpansionsAreRefusedBeforeAllocating) {
  // (a,a), (256,256), (257,257), ...: rank r expands to 2^(r+1) bytes.
  std::vector<std::pair<uint32_t, uint32_t>> merges = {{97, 97}};
  for (uint32_t rank = 1; rank < 60; ++rank) merges.push_back({255 + rank, 255 + rank});
  const Result<Tokenizer> tokenizer = Tokenizer::ByteBpe(merges);
  ASSERT_FALSE(tokenizer);
  EXPECT_EQ(tokenizer.error().code(), ErrorCode::kAllocation);
  // A modest doubling chain is fine.
  merges.resize(12);
  const Result<Tokenizer> small = Tokenizer::ByteBpe(merges);
  ASSERT_TRUE(small) << small.error().Debug();
  const Result<std::string_view> longest = small->TokenBytes(258 + 11);
  ASSERT_TRUE(longest);
  EXPECT_EQ(longest->size(), 4096u);
  EXPECT_EQ(*small->EncodeContent(std::string(4096, 'a')), (std::vector<uint32_t>{258 + 11}));
}

TEST(LiteralTokenizerTest, DecodesPiecesButHasNoEncoder) {
  Result<Tokenizer> literal = Tokenizer::Literal({"\xff", "a", std::string("\0\xfe", 2)});
  ASSERT_TRUE(literal);
  EXPECT_EQ(literal->kind_name(), "literal-u32");
  EXPECT_EQ(literal->vocabulary_size(), 3u);
  EXPECT_FALSE(literal->bos_id());
  EXPECT_FALSE(literal->eos_id());
  const std::vector<uint32_t> ids = {1, 0, 1};
  EXPECT_EQ(testing::HexOf(*literal->DecodeContent(ids)), "61ff61");
  const Result<std::string> text = literal->DecodeContentUtf8(ids);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().Debug(), "InvalidUtf8 { valid_up_to: 1, error_len: Some(1) }");
  const std::vector<uint32_t> out_of_range = {1, 3};
  const Result<std::string> unknown = literal->DecodeContent(out_of_range);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().Debug(), "UnknownToken { position: 1, token_id: 3 }");

  const Result<std::vector<uint32_t>> encoded = literal->EncodeContent("a");
  ASSERT_FALSE(encoded);
  EXPECT_EQ(encoded.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(literal->EncodeDocument("a"));
  EXPECT_FALSE(literal->DecodeDocumentUtf8(ids));
}

TEST(LiteralTokenizerTest, RejectsEmptyAndRepeatedPieces) {
  Result<Tokenizer> empty = Tokenizer::Literal({});
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().Debug(),
            "Tokenizer(\"a literal tokenizer needs at least one ordered token\")");
  Result<Tokenizer> empty_piece = Tokenizer::Literal({"a", ""});
  ASSERT_FALSE(empty_piece);
  EXPECT_EQ(empty_piece.error().message(),
            "invalid checkpoint tokenizer: literal token ID 1 has an empty byte spelling");
  Result<Tokenizer> repeated = Tokenizer::Literal({"a", "b", "a"});
  ASSERT_FALSE(repeated);
  EXPECT_EQ(repeated.error().Debug(),
            "Tokenizer(\"literal token ID 2 repeats an earlier byte spelling\")");
}

}  // namespace
}  // namespace kvrt
