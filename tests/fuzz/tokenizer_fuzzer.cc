// Byte-BPE and literal tokenizers (spec/checkpoint.md §11) on arbitrary input.
//
// The first input byte picks a tokenizer: one loaded from a fixture checkpoint,
// or one built from fuzzed merges or pieces (whose construction must then either
// succeed or fail with a typed error). The rest is text to encode or ids to
// decode. Properties:
//   * byte-BPE encoding equals an independent naive implementation of §11.3,
//     and decode(encode(text)) == text on every decode path;
//   * every decode of arbitrary ids returns exactly the error the spec's scan
//     order predicts, or the concatenated token bytes;
//   * a merge token's bytes are its operands' bytes;
//   * strict UTF-8 results agree with Rust's from_utf8 rules, re-implemented.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_check.h"
#include "fuzz_input.h"
#include "formats/llmcp35/checkpoint.h"
#include "kvrt/tokenizer.h"
#include "text_oracles.h"

namespace kvrt::fuzz {
namespace {

// The naive encoder is quadratic-ish (ranks × length); longer texts only get
// the round-trip properties.
constexpr size_t kOracleTextLimit = 512;

std::vector<Tokenizer> LoadFixtureTokenizers() {
  std::vector<Tokenizer> tokenizers;
  for (const char* name : {"checkpoints/ch39_trained.ckpt", "checkpoints/variant_bpe16_2layer_groups.ckpt",
                           "demo/demo.ckpt", "checkpoints/ch38_loaded.ckpt",
                           "checkpoints/variant_literal_binary_step0.ckpt"}) {
    Result<Checkpoint> checkpoint = LoadCheckpoint(std::string(KVRT_FIXTURES_DIR) + "/" + name);
    KVRT_FUZZ_CHECK(checkpoint, std::string(name) + ": " + Describe(checkpoint));
    tokenizers.push_back(checkpoint->tokenizer);
  }
  return tokenizers;
}

const std::vector<Tokenizer>& FixtureTokenizers() {
  static const std::vector<Tokenizer> tokenizers = LoadFixtureTokenizers();
  return tokenizers;
}

void ExpectCode(const Error& error, ErrorCode code, const char* what) {
  CheckTypedError(error);
  KVRT_FUZZ_CHECK(error.code() == code, std::string(what) + ": " + error.Debug());
}

// The strict UTF-8 view of `bytes`, judged by the oracle.
void CheckUtf8Result(const Result<std::string>& text, const std::string& bytes) {
  const std::optional<Utf8Verdict> verdict = RustUtf8Check(bytes);
  if (!verdict) {
    KVRT_FUZZ_CHECK(text && *text == bytes, Describe(text));
    return;
  }
  KVRT_FUZZ_CHECK(!text, "invalid UTF-8 accepted");
  ExpectCode(text.error(), ErrorCode::kInvalidUtf8, "utf-8");
  KVRT_FUZZ_CHECK(text.error().U64("valid_up_to") == verdict->valid_up_to, text.error().Debug());
  const FieldValue* error_len = text.error().Field("error_len");
  std::optional<uint64_t> expected_len;
  if (verdict->error_len) expected_len = *verdict->error_len;
  KVRT_FUZZ_CHECK(error_len != nullptr && *error_len == FieldValue(expected_len),
                  text.error().Debug());
  KVRT_FUZZ_CHECK(ValidateUtf8(bytes).has_value(), "ValidateUtf8 accepts invalid bytes");
}

// decode_content of arbitrary ids: control scan, then lookups (§11.2), with
// positions offset by `base` (document decoding reports document indices).
struct ContentVerdict {
  std::optional<ErrorCode> error;
  uint64_t position = 0;
  std::string bytes;
};

ContentVerdict PredictContent(const Tokenizer& tokenizer, std::span<const uint32_t> ids,
                              size_t base) {
  const bool bpe = tokenizer.kind() == TokenizerKind::kByteBpe;
  if (bpe) {
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] <= 1) return {ErrorCode::kControlTokenInContent, base + i, {}};
    }
  }
  ContentVerdict verdict;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= tokenizer.vocabulary_size()) return {ErrorCode::kUnknownToken, base + i, {}};
    Result<std::string_view> piece = tokenizer.TokenBytes(ids[i]);
    KVRT_FUZZ_CHECK(piece, Describe(piece));
    verdict.bytes += *piece;
  }
  return verdict;
}

void CheckContentDecodes(const Tokenizer& tokenizer, std::span<const uint32_t> ids) {
  const ContentVerdict verdict = PredictContent(tokenizer, ids, 0);
  Result<std::string> bytes = tokenizer.DecodeContent(ids);
  Result<std::string> text = tokenizer.DecodeContentUtf8(ids);
  if (verdict.error) {
    KVRT_FUZZ_CHECK(!bytes && !text, "decode accepted a bad id");
    for (const Error* error : {&bytes.error(), &text.error()}) {
      ExpectCode(*error, *verdict.error, "content decode");
      KVRT_FUZZ_CHECK(error->U64("position") == verdict.position, error->Debug());
    }
    return;
  }
  KVRT_FUZZ_CHECK(bytes && *bytes == verdict.bytes, Describe(bytes));
  CheckUtf8Result(text, verdict.bytes);
}

void CheckDocumentDecode(const Tokenizer& tokenizer, std::span<const uint32_t> ids) {
  Result<std::string> text = tokenizer.DecodeDocumentUtf8(ids);
  if (tokenizer.kind() != TokenizerKind::kByteBpe) {
    if (!text) CheckTypedError(text.error());
    return;
  }
  if (ids.size() < 2) return ExpectCode(text.error(), ErrorCode::kDocumentTooShort, "document");
  if (ids.front() != 0) return ExpectCode(text.error(), ErrorCode::kExpectedBos, "document");
  if (ids.back() != 1) return ExpectCode(text.error(), ErrorCode::kExpectedEos, "document");
  const std::span<const uint32_t> interior = ids.subspan(1, ids.size() - 2);
  for (size_t i = 0; i < interior.size(); ++i) {
    if (interior[i] <= 1) {
      ExpectCode(text.error(), ErrorCode::kInteriorControlToken, "document");
      KVRT_FUZZ_CHECK(text.error().U64("position") == i + 1, text.error().Debug());
      return;
    }
  }
  const ContentVerdict verdict = PredictContent(tokenizer, interior, 1);
  if (verdict.error) {
    ExpectCode(text.error(), *verdict.error, "document interior");
    KVRT_FUZZ_CHECK(text.error().U64("position") == verdict.position, text.error().Debug());
    return;
  }
  CheckUtf8Result(text, verdict.bytes);
}

// A merge's bytes are its operands' bytes, for every merge id in `ids`.
void CheckMergeExpansions(const Tokenizer& tokenizer, std::span<const uint32_t> ids) {
  if (tokenizer.kind() != TokenizerKind::kByteBpe) return;
  for (uint32_t id : ids) {
    if (id < 258 || id >= tokenizer.vocabulary_size()) continue;
    const auto [left, right] = tokenizer.merges()[id - 258];
    const std::string joined = std::string(*tokenizer.TokenBytes(left + 2)) +
                               std::string(*tokenizer.TokenBytes(right + 2));
    KVRT_FUZZ_CHECK(*tokenizer.TokenBytes(id) == joined, "merge expansion");
  }
}

void CheckBpeText(const Tokenizer& tokenizer, std::string_view text) {
  Result<std::vector<uint32_t>> ids = tokenizer.EncodeContent(text);
  KVRT_FUZZ_CHECK(ids, Describe(ids));
  if (text.size() <= kOracleTextLimit) {
    KVRT_FUZZ_CHECK(*ids == NaiveBpeEncode(text, tokenizer.merges()), "encoding differs from §11.3");
  }
  for (uint32_t id : *ids) KVRT_FUZZ_CHECK(id >= 2 && id < tokenizer.vocabulary_size(), "content id");
  Result<std::string> bytes = tokenizer.DecodeContent(*ids);
  KVRT_FUZZ_CHECK(bytes && *bytes == text, "decode(encode(text)) != text");
  CheckUtf8Result(tokenizer.DecodeContentUtf8(*ids), std::string(text));
  Result<std::vector<uint32_t>> document = tokenizer.EncodeDocument(text);
  KVRT_FUZZ_CHECK(document && document->size() == ids->size() + 2 && document->front() == 0 &&
                      document->back() == 1 &&
                      std::equal(ids->begin(), ids->end(), document->begin() + 1),
                  "document encoding");
  CheckUtf8Result(tokenizer.DecodeDocumentUtf8(*document), std::string(text));
  CheckMergeExpansions(tokenizer, *ids);
}

void CheckIds(const Tokenizer& tokenizer, std::span<const uint32_t> ids) {
  CheckContentDecodes(tokenizer, ids);
  CheckDocumentDecode(tokenizer, ids);
  CheckMergeExpansions(tokenizer, ids);
  if (tokenizer.kind() == TokenizerKind::kLiteral) {
    Result<std::vector<uint32_t>> encoded = tokenizer.EncodeContent("text");
    ExpectCode(encoded.error(), ErrorCode::kInvalidArgument, "literal encoder");
  }
}

// Ids near the vocabulary, with a few far outside it.
std::vector<uint32_t> ReadIds(FuzzInput& input, const Tokenizer& tokenizer) {
  std::vector<uint32_t> ids;
  const uint32_t span = static_cast<uint32_t>(tokenizer.vocabulary_size()) + 3;
  while (!input.empty() && ids.size() < 512) {
    const uint8_t kind = input.Byte();
    ids.push_back(kind == 0xFF ? input.U32() : (uint32_t{kind} << 8 | input.Byte()) % span);
  }
  return ids;
}

Result<Tokenizer> ReadBpe(FuzzInput& input) {
  std::vector<std::pair<uint32_t, uint32_t>> merges(input.Byte() % 48);
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    // Mostly valid operands (a byte or an earlier merge), sometimes one too far.
    const uint32_t limit = static_cast<uint32_t>(256 + rank + (input.Byte() == 0 ? 1 : 0));
    merges[rank].first = input.U16() % limit;
    merges[rank].second = input.U16() % limit;
  }
  Result<Tokenizer> tokenizer = Tokenizer::ByteBpe(merges);
  if (tokenizer) KVRT_FUZZ_CHECK(tokenizer->merges() == merges, "merges kept");
  return tokenizer;
}

Result<Tokenizer> ReadLiteral(FuzzInput& input) {
  std::vector<std::string> pieces(input.Byte() % 24);
  for (std::string& piece : pieces) piece = input.String(input.Byte() % 6);
  Result<Tokenizer> tokenizer = Tokenizer::Literal(pieces);
  if (tokenizer) KVRT_FUZZ_CHECK(tokenizer->pieces() == pieces, "pieces kept");
  return tokenizer;
}

void Run(FuzzInput& input) {
  const std::vector<Tokenizer>& fixtures = FixtureTokenizers();
  const uint8_t selector = input.Byte();
  const bool decode_ids = selector & 0x80;
  const uint8_t source = selector & 0x7F;
  Result<Tokenizer> tokenizer = Fail(ErrorCode::kInvalidArgument, {}, "none");
  if (source < fixtures.size()) {
    tokenizer = fixtures[source];
  } else if (source % 2 == 0) {
    tokenizer = ReadBpe(input);
  } else {
    tokenizer = ReadLiteral(input);
  }
  if (!tokenizer) return CheckTypedError(tokenizer.error());
  if (decode_ids || tokenizer->kind() != TokenizerKind::kByteBpe) {
    const std::vector<uint32_t> ids = ReadIds(input, *tokenizer);
    return CheckIds(*tokenizer, ids);
  }
  CheckBpeText(*tokenizer, input.Rest());
}

}  // namespace
}  // namespace kvrt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvrt::fuzz::FuzzInput input(data, size);
  kvrt::fuzz::Run(input);
  return 0;
}
