// The literal-u32 and byte-BPE tokenizers of LLMCP35 checkpoints
// (spec/checkpoint.md §7.1, §11), and the llama2.c vocabulary (its text
// algorithms live in formats/llama2c_encoding.cc). Error variants, payload names
// and messages of the first two are those of the reference's BpeTokenizerError
// and CheckpointError::Tokenizer. The GGUF kinds forward to
// tokenizer::VocabularyTokenizer (tokenizer/vocabulary_tokenizer.h).
#include "kvrt/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <new>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "tokenizer/llama2c_encoding.h"
#include "tokenizer/vocabulary_tokenizer.h"

namespace kvrt {
namespace {

constexpr uint32_t kBosId = 0;
constexpr uint32_t kEosId = 1;
constexpr uint32_t kContentIdOffset = 2;   // training id t is content id t + 2
constexpr uint32_t kByteTokenCount = 256;  // training ids 0..255 are the bytes
constexpr uint64_t kFirstMergeContentId = kContentIdOffset + kByteTokenCount;  // 258

// Merge expansions can double in length at every rank ((a,a), (256,256), ...), so
// 60 pairs in a 6 KB file could ask for 2^60 bytes. Real tokenizers need a few
// bytes per merge; this budget is orders of magnitude above that and still keeps
// a hostile file from allocating gigabytes.
constexpr uint64_t kExpansionBudgetBase = uint64_t{64} << 20;
constexpr uint64_t kExpansionBudgetPerMerge = 256;

Error TokenizerError(std::string message) {
  return Error(ErrorCode::kTokenizer, {{"", message}}, "invalid checkpoint tokenizer: " + message);
}

Error UnknownToken(size_t position, uint32_t token_id) {
  return Error(ErrorCode::kUnknownToken,
               {{"position", uint64_t{position}}, {"token_id", uint64_t{token_id}}},
               "token " + std::to_string(token_id) + " at position " + std::to_string(position) +
                   " is outside this tokenizer vocabulary");
}

Error ControlTokenInContent(size_t position, uint32_t token_id) {
  return Error(ErrorCode::kControlTokenInContent,
               {{"position", uint64_t{position}}, {"token_id", uint64_t{token_id}}},
               "control token " + std::to_string(token_id) +
                   " is not allowed in content at position " + std::to_string(position));
}

// One-byte views for llama2.c raw-byte tokens, which have no stored byte to point at.
constexpr std::array<char, 256> kAllBytes = [] {
  std::array<char, 256> bytes{};
  for (size_t b = 0; b < bytes.size(); ++b) bytes[b] = static_cast<char>(b);
  return bytes;
}();

Error DecodedTextTooLarge() {
  return Error(ErrorCode::kAllocation, {{"context", std::string("decoded token bytes")}},
               "could not allocate the decoded token bytes");
}

// The strict text view of decoded bytes: all or nothing, like String::from_utf8.
Result<std::string> RequireUtf8(std::string bytes) {
  if (const std::optional<Utf8Error> bad = ValidateUtf8(bytes)) {
    std::optional<uint64_t> error_len;
    if (bad->error_len) error_len = uint64_t{*bad->error_len};
    return Fail(ErrorCode::kInvalidUtf8,
                {{"valid_up_to", uint64_t{bad->valid_up_to}}, {"error_len", error_len}},
                "decoded bytes are not valid UTF-8 at byte " + std::to_string(bad->valid_up_to));
  }
  return bytes;
}

}  // namespace

Tokenizer::Tokenizer() {
  static const std::shared_ptr<const Impl> empty = std::make_shared<const Impl>();
  impl_ = empty;
}

TokenizerKind Tokenizer::kind() const { return impl_->kind; }
const std::vector<std::string>& Tokenizer::pieces() const { return impl_->pieces; }
const std::vector<std::pair<uint32_t, uint32_t>>& Tokenizer::merges() const { return impl_->merges; }
const std::vector<float>& Tokenizer::scores() const { return impl_->scores; }
uint32_t Tokenizer::max_token_length() const { return impl_->max_token_length; }

Result<Tokenizer> Tokenizer::Literal(std::vector<std::string> pieces) {
  if (pieces.empty()) {
    return Fail(TokenizerError("a literal tokenizer needs at least one ordered token"));
  }
  std::set<std::string_view> seen;
  for (size_t id = 0; id < pieces.size(); ++id) {
    if (pieces[id].empty()) {
      return Fail(
          TokenizerError("literal token ID " + std::to_string(id) + " has an empty byte spelling"));
    }
    if (!seen.insert(pieces[id]).second) {
      return Fail(TokenizerError("literal token ID " + std::to_string(id) +
                                 " repeats an earlier byte spelling"));
    }
  }
  Tokenizer::Impl tokenizer;
  tokenizer.kind = TokenizerKind::kLiteral;
  tokenizer.pieces = std::move(pieces);
  return Tokenizer(std::make_shared<const Tokenizer::Impl>(std::move(tokenizer)));
}

Result<Tokenizer> Tokenizer::ByteBpe(std::vector<std::pair<uint32_t, uint32_t>> merges) {
  const uint64_t merge_count = merges.size();
  // Every content id, up to 257 + n, must be a u32.
  if (merge_count > uint64_t{UINT32_MAX} + 1 - kFirstMergeContentId) {
    return Fail(ErrorCode::kLayoutOverflow, {{"merge_count", merge_count}},
                std::to_string(merge_count) + " merge ranks do not fit tokenizer layout version 1");
  }
  // Validate every rank and measure the expansions before building any of them.
  std::vector<uint64_t> lengths(kByteTokenCount + merges.size(), 1);
  std::set<std::pair<uint32_t, uint32_t>> seen;
  uint64_t total_bytes = kByteTokenCount;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto [left, right] = merges[rank];
    const uint64_t rank_id = kByteTokenCount + rank;
    for (const uint32_t operand : {left, right}) {
      if (operand >= rank_id) {
        return Fail(ErrorCode::kUnknownMergeOperand,
                    {{"rank", uint64_t{rank}}, {"token_id", uint64_t{operand}}},
                    "merge rank " + std::to_string(rank) +
                        " references unavailable training token " + std::to_string(operand));
      }
    }
    if (!seen.insert(merges[rank]).second) {
      return Fail(ErrorCode::kDuplicateMergePair,
                  {{"rank", uint64_t{rank}}, {"left", uint64_t{left}}, {"right", uint64_t{right}}},
                  "merge rank " + std::to_string(rank) + " repeats training pair (" +
                      std::to_string(left) + "," + std::to_string(right) + ")");
    }
    // Saturating sums: the budget check below rejects anything that large.
    const uint64_t length = std::min(lengths[left] + lengths[right], uint64_t{1} << 62);
    lengths[rank_id] = length;
    total_bytes = std::min(total_bytes + length, uint64_t{1} << 62);
  }
  const uint64_t budget = kExpansionBudgetBase + kExpansionBudgetPerMerge * merge_count;
  if (total_bytes > budget) {
    return Fail(ErrorCode::kAllocation, {{"context", std::string("BPE token expansions")}},
                "could not allocate BPE token expansions: they need " +
                    std::to_string(total_bytes) + " bytes, more than the limit of " +
                    std::to_string(budget));
  }

  Tokenizer::Impl tokenizer;
  tokenizer.kind = TokenizerKind::kByteBpe;
  tokenizer.expansions.reserve(lengths.size());
  for (uint32_t byte = 0; byte < kByteTokenCount; ++byte) {
    tokenizer.expansions.emplace_back(1, static_cast<char>(byte));
  }
  for (const auto& [left, right] : merges) {
    std::string bytes;
    bytes.reserve(tokenizer.expansions[left].size() + tokenizer.expansions[right].size());
    bytes += tokenizer.expansions[left];
    bytes += tokenizer.expansions[right];
    tokenizer.expansions.push_back(std::move(bytes));
  }
  tokenizer.merges = std::move(merges);
  return Tokenizer(std::make_shared<const Tokenizer::Impl>(std::move(tokenizer)));
}

Result<Tokenizer> Tokenizer::Llama2c(std::vector<std::string> pieces, std::vector<float> scores,
                                     uint32_t max_token_length) {
  if (pieces.size() != scores.size()) {
    return Fail(ErrorCode::kInvalidArgument, {},
                "a llama2.c vocabulary needs one score per piece, got " +
                    std::to_string(pieces.size()) + " pieces and " + std::to_string(scores.size()) +
                    " scores");
  }
  if (pieces.size() > UINT32_MAX) {
    return Fail(ErrorCode::kInvalidArgument, {},
                "a llama2.c vocabulary of " + std::to_string(pieces.size()) +
                    " pieces does not fit u32 token ids");
  }
  // run.c's byte fallback writes byte b as id b + 3 and its decoder prints such a
  // token as the byte, so both ends need the byte tokens exactly there.
  for (uint32_t id = llama2c::kFirstByteId; id < llama2c::kMinimumVocabulary; ++id) {
    const uint8_t byte = static_cast<uint8_t>(id - llama2c::kFirstByteId);
    if (id >= pieces.size() || llama2c::RawByte(pieces[id]) != byte) {
      return Fail(ErrorCode::kMissingByteTokens,
                  {{"token_id", uint64_t{id}}, {"vocabulary_size", uint64_t{pieces.size()}}},
                  "llama2.c token " + std::to_string(id) + " must be the byte token " +
                      llama2c::RawBytePiece(byte) + " (vocabulary " +
                      std::to_string(pieces.size()) + ")");
    }
  }
  for (size_t id = 0; id < pieces.size(); ++id) {
    if (!std::isfinite(scores[id])) {
      return Fail(ErrorCode::kNonFiniteScore, {{"token_id", uint64_t{id}}},
                  "llama2.c token " + std::to_string(id) + " has a non-finite score");
    }
    // run.c merges in a buffer of 2·max_token_length bytes.
    if (pieces[id].size() > max_token_length) {
      return Fail(ErrorCode::kInvalidTokenLength,
                  {{"token_id", uint64_t{id}}, {"length", int64_t(pieces[id].size())}},
                  "llama2.c token " + std::to_string(id) + " has " +
                      std::to_string(pieces[id].size()) + " bytes, more than max_token_length " +
                      std::to_string(max_token_length));
    }
  }
  Tokenizer::Impl tokenizer;
  tokenizer.kind = TokenizerKind::kLlama2c;
  try {
    tokenizer.sorted_ids = llama2c::SortPieceIds(pieces);
  } catch (const std::bad_alloc&) {
    return Fail(ErrorCode::kAllocation, {{"context", std::string("llama2.c piece index")}},
                "could not allocate the llama2.c piece index");
  }
  tokenizer.pieces = std::move(pieces);
  tokenizer.scores = std::move(scores);
  tokenizer.max_token_length = max_token_length;
  return Tokenizer(std::make_shared<const Tokenizer::Impl>(std::move(tokenizer)));
}

Result<Tokenizer> TokenizerFromVocabulary(VocabularyData vocabulary) {
  Result<std::shared_ptr<const tokenizer::VocabularyTokenizer>> built =
      tokenizer::VocabularyTokenizer::Build(std::move(vocabulary));
  if (!built) return Fail(std::move(built.error()));
  Tokenizer::Impl tokenizer;
  tokenizer.kind =
      (*built)->is_sentencepiece() ? TokenizerKind::kSentencePiece : TokenizerKind::kGpt2Bpe;
  tokenizer.vocabulary = std::move(*built);
  return Tokenizer(std::make_shared<const Tokenizer::Impl>(std::move(tokenizer)));
}

std::string_view Tokenizer::kind_name() const {
  switch (impl_->kind) {
    case TokenizerKind::kLiteral: return "literal-u32";
    case TokenizerKind::kByteBpe: return "byte-bpe";
    case TokenizerKind::kLlama2c: return "llama2c";
    case TokenizerKind::kSentencePiece: return "sentencepiece";
    case TokenizerKind::kGpt2Bpe: return "gpt2-bpe";
  }
  return "unknown";
}

size_t Tokenizer::vocabulary_size() const {
  if (impl_->vocabulary) return impl_->vocabulary->size();
  return impl_->kind == TokenizerKind::kByteBpe ? kFirstMergeContentId + impl_->merges.size()
                                                : impl_->pieces.size();
}

std::optional<uint32_t> Tokenizer::bos_id() const {
  if (impl_->vocabulary) return impl_->vocabulary->bos();
  if (impl_->kind == TokenizerKind::kByteBpe) return kBosId;
  if (impl_->kind == TokenizerKind::kLlama2c) return llama2c::kBosId;
  return std::nullopt;
}

std::optional<uint32_t> Tokenizer::eos_id() const {
  if (impl_->vocabulary) return impl_->vocabulary->eos();
  if (impl_->kind == TokenizerKind::kByteBpe) return kEosId;
  if (impl_->kind == TokenizerKind::kLlama2c) return llama2c::kEosId;
  return std::nullopt;
}

bool Tokenizer::add_bos() const {
  if (impl_->vocabulary) return impl_->vocabulary->add_bos();
  return impl_->kind == TokenizerKind::kLlama2c;
}

bool Tokenizer::add_eos() const { return impl_->vocabulary && impl_->vocabulary->add_eos(); }

std::span<const uint32_t> Tokenizer::end_of_generation_ids() const {
  static constexpr uint32_t kByteBpeEnd[] = {kEosId};
  static constexpr uint32_t kLlama2cEnd[] = {llama2c::kEosId};
  if (impl_->vocabulary) return impl_->vocabulary->end_of_generation();
  if (impl_->kind == TokenizerKind::kByteBpe) return kByteBpeEnd;
  if (impl_->kind == TokenizerKind::kLlama2c) return kLlama2cEnd;
  return {};
}

std::optional<std::string_view> Tokenizer::chat_template() const {
  if (!impl_->vocabulary || !impl_->vocabulary->chat_template()) return std::nullopt;
  return std::string_view(*impl_->vocabulary->chat_template());
}

Result<std::vector<uint32_t>> Tokenizer::EncodeContent(std::string_view text,
                                                       SpecialTokens special) const {
  if (impl_->vocabulary) return impl_->vocabulary->Encode(text, special == SpecialTokens::kParse);
  if (impl_->kind == TokenizerKind::kLlama2c) {
    try {
      return llama2c::Encode(impl_->pieces, impl_->scores, impl_->sorted_ids, text);
    } catch (const std::bad_alloc&) {
      return Fail(ErrorCode::kAllocation, {{"context", std::string("encoded token ids")}},
                  "could not allocate the encoded token ids");
    } catch (const std::length_error&) {
      return Fail(ErrorCode::kAllocation, {{"context", std::string("encoded token ids")}},
                  "could not allocate the encoded token ids");
    }
  }
  if (impl_->kind != TokenizerKind::kByteBpe) {
    return Fail(ErrorCode::kInvalidArgument, {},
                "the literal-u32 tokenizer has no encoder; only byte-BPE tokenizers encode text");
  }
  std::vector<uint32_t> ids;
  std::vector<size_t> counts;
  try {
    ids.reserve(text.size());
    counts.assign(vocabulary_size(), 0);
  } catch (const std::bad_alloc&) {
    return Fail(ErrorCode::kAllocation, {{"context", std::string("encoded token ids")}},
                "could not allocate the encoded token ids");
  }
  for (const char c : text) {
    const uint32_t id = static_cast<uint8_t>(c) + kContentIdOffset;
    ids.push_back(id);
    ++counts[id];
  }
  // One left-to-right pass per rank, in rank order (spec §11.3). A rank whose
  // operands are absent cannot match, so its pass is skipped; that changes only
  // the running time.
  for (size_t rank = 0; rank < impl_->merges.size() && ids.size() >= 2; ++rank) {
    const uint32_t left = impl_->merges[rank].first + kContentIdOffset;
    const uint32_t right = impl_->merges[rank].second + kContentIdOffset;
    if (counts[left] == 0 || counts[right] == 0) continue;
    const auto merged = static_cast<uint32_t>(kFirstMergeContentId + rank);
    size_t write = 0;
    for (size_t read = 0; read < ids.size();) {
      if (read + 1 < ids.size() && ids[read] == left && ids[read + 1] == right) {
        ids[write++] = merged;
        --counts[left];
        --counts[right];
        ++counts[merged];
        read += 2;
      } else {
        ids[write++] = ids[read++];
      }
    }
    ids.resize(write);
  }
  return ids;
}

Result<std::vector<uint32_t>> Tokenizer::EncodeDocument(std::string_view text) const {
  Result<std::vector<uint32_t>> content = EncodeContent(text);
  if (!content) return content;
  if (!bos_id() || !eos_id()) {
    return Fail(ErrorCode::kInvalidArgument, {},
                "this tokenizer has no BOS/EOS ids, so it has no document form");
  }
  std::vector<uint32_t> document;
  document.reserve(content->size() + 2);
  document.push_back(*bos_id());
  document.insert(document.end(), content->begin(), content->end());
  document.push_back(*eos_id());
  return document;
}

Result<std::vector<uint32_t>> Tokenizer::EncodePrompt(std::string_view text,
                                                      SpecialTokens special) const {
  Result<std::vector<uint32_t>> content = EncodeContent(text, special);
  if (!content || !add_bos() || !bos_id()) return content;
  content->insert(content->begin(), *bos_id());
  return content;
}

Result<std::string_view> Tokenizer::TokenBytes(uint32_t id, size_t position) const {
  if (impl_->vocabulary) return impl_->vocabulary->TokenBytes(id, position);
  if (impl_->kind != TokenizerKind::kByteBpe) {
    if (id >= impl_->pieces.size()) return Fail(UnknownToken(position, id));
    const std::string_view piece = impl_->pieces[id];
    if (impl_->kind == TokenizerKind::kLlama2c) {
      if (const std::optional<uint8_t> byte = llama2c::RawByte(piece)) {
        return std::string_view(&kAllBytes[*byte], 1);
      }
    }
    return piece;
  }
  if (id == kBosId || id == kEosId) return Fail(ControlTokenInContent(position, id));
  const uint64_t training_id = id - kContentIdOffset;
  if (training_id >= impl_->expansions.size()) return Fail(UnknownToken(position, id));
  return std::string_view(impl_->expansions[training_id]);
}

Result<std::string_view> Tokenizer::TokenBytesAfter(std::optional<uint32_t> previous, uint32_t id,
                                                    size_t position) const {
  if (impl_->vocabulary) return impl_->vocabulary->TokenBytesAfter(previous, id, position);
  Result<std::string_view> bytes = TokenBytes(id, position);
  if (bytes && impl_->kind == TokenizerKind::kLlama2c && previous == llama2c::kBosId &&
      !bytes->empty() && bytes->front() == ' ' && !llama2c::RawByte(impl_->pieces[id])) {
    bytes->remove_prefix(1);
  }
  return bytes;
}

namespace {

// Concatenates the bytes of `ids`, reporting positions shifted by
// `position_offset` (1 for a document interior); `previous` precedes ids[0].
Result<std::string> ConcatenateTokenBytes(const Tokenizer& tokenizer, std::span<const uint32_t> ids,
                                          size_t position_offset,
                                          std::optional<uint32_t> previous = std::nullopt) {
  std::string bytes;
  for (size_t i = 0; i < ids.size(); ++i) {
    Result<std::string_view> piece =
        tokenizer.TokenBytesAfter(i == 0 ? previous : std::optional<uint32_t>(ids[i - 1]), ids[i],
                                  i + position_offset);
    if (!piece) return Fail(std::move(piece.error()));
    try {
      bytes += *piece;
    } catch (const std::bad_alloc&) {
      return Fail(DecodedTextTooLarge());
    } catch (const std::length_error&) {
      return Fail(DecodedTextTooLarge());
    }
  }
  return bytes;
}

}  // namespace

Result<std::string> Tokenizer::DecodeContent(std::span<const uint32_t> ids) const {
  if (impl_->kind == TokenizerKind::kByteBpe) {
    // Controls are reported before any lookup: [266, 0] fails at position 1.
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] == kBosId || ids[i] == kEosId) return Fail(ControlTokenInContent(i, ids[i]));
    }
  }
  return ConcatenateTokenBytes(*this, ids, 0);
}

Result<std::string> Tokenizer::DecodeContentUtf8(std::span<const uint32_t> ids) const {
  Result<std::string> bytes = DecodeContent(ids);
  if (!bytes) return bytes;
  return RequireUtf8(std::move(*bytes));
}

Result<std::string> Tokenizer::DecodeDocumentUtf8(std::span<const uint32_t> ids) const {
  if (!bos_id() || !eos_id()) {
    return Fail(ErrorCode::kInvalidArgument, {},
                "the " + std::string(kind_name()) +
                    " tokenizer has no BOS/EOS ids, so it has no document form");
  }
  const uint32_t bos = *bos_id(), eos = *eos_id();
  if (ids.size() < 2) {
    return Fail(ErrorCode::kDocumentTooShort, {{"length", uint64_t{ids.size()}}},
                "document token sequence of length " + std::to_string(ids.size()) +
                    " cannot contain BOS and EOS");
  }
  if (ids.front() != bos) {
    return Fail(ErrorCode::kExpectedBos, {{"found", uint64_t{ids.front()}}},
                "expected BOS token " + std::to_string(bos) + ", found " +
                    std::to_string(ids.front()) + " at position 0");
  }
  if (ids.back() != eos) {
    return Fail(ErrorCode::kExpectedEos, {{"found", uint64_t{ids.back()}}},
                "expected EOS token " + std::to_string(eos) + ", found " +
                    std::to_string(ids.back()) + " at the final position");
  }
  const std::span<const uint32_t> interior = ids.subspan(1, ids.size() - 2);
  for (size_t i = 0; i < interior.size(); ++i) {
    if (interior[i] == bos || interior[i] == eos) {
      return Fail(ErrorCode::kInteriorControlToken,
                  {{"position", uint64_t{i + 1}}, {"token_id", uint64_t{interior[i]}}},
                  "document control token " + std::to_string(interior[i]) +
                      " is not allowed at position " + std::to_string(i + 1));
    }
  }
  Result<std::string> bytes = ConcatenateTokenBytes(*this, interior, 1, bos);
  if (!bytes) return bytes;
  return RequireUtf8(std::move(*bytes));
}

}  // namespace kvrt
