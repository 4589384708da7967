// Tokenizers stored in LLMCP35 checkpoints (spec/checkpoint.md §7.1, §11):
// literal-u32 (ordered byte-string pieces, no encoder) and byte-BPE (ordered merge
// pairs; BOS = 0, EOS = 1, byte b = b + 2, merge rank r = 258 + r).
//
// Every text path is strict: decoding to text fails with InvalidUtf8 instead of
// replacing bytes, like the reference.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvrt/error.h"

namespace kvrt {

enum class TokenizerKind : uint8_t {
  kLiteral = 1,  // "literal-u32"
  kByteBpe = 2,  // "byte-bpe"
};

class Tokenizer {
 public:
  // An empty literal tokenizer (vocabulary 0); real ones come from the factories.
  Tokenizer() = default;

  // A literal tokenizer over `pieces` (id i = piece i). Fails with
  // Tokenizer("literal token ID i repeats an earlier byte spelling") on a repeat, or
  // when the list or a piece is empty.
  static Result<Tokenizer> Literal(std::vector<std::string> pieces);
  // A byte-BPE tokenizer from training-space merge pairs in rank order; fails with
  // UnknownMergeOperand{rank, token_id} or DuplicateMergePair{rank, left, right}.
  static Result<Tokenizer> ByteBpe(std::vector<std::pair<uint32_t, uint32_t>> merges);

  TokenizerKind kind() const { return kind_; }
  std::string_view kind_name() const;  // "literal-u32" or "byte-bpe"
  size_t vocabulary_size() const;
  // Literal pieces (empty for byte-BPE) and training-space merges (empty for literal).
  const std::vector<std::string>& pieces() const { return pieces_; }
  const std::vector<std::pair<uint32_t, uint32_t>>& merges() const { return merges_; }
  // BOS and EOS ids (byte-BPE: 0 and 1; literal: none).
  std::optional<uint32_t> bos_id() const;
  std::optional<uint32_t> eos_id() const;

  // Byte-BPE content encoding of `text` (no BOS/EOS): bytes to ids, then one
  // left-to-right pass per merge rank. A literal tokenizer has no encoder and
  // returns InvalidArgument.
  Result<std::vector<uint32_t>> EncodeContent(std::string_view text) const;
  // [BOS] + content + [EOS] (byte-BPE only).
  Result<std::vector<uint32_t>> EncodeDocument(std::string_view text) const;

  // Bytes of one id: a piece, a byte or a merge expansion. Control ids have no
  // bytes (ControlTokenInContent); ids past the vocabulary give UnknownToken.
  Result<std::string_view> TokenBytes(uint32_t id, size_t position = 0) const;
  // decode_content: concatenated bytes, no UTF-8 check. Byte-BPE first scans for
  // control ids, then looks ids up (spec/checkpoint.md §11.2).
  Result<std::string> DecodeContent(std::span<const uint32_t> ids) const;
  // decode_content_utf8: DecodeContent + strict UTF-8 (InvalidUtf8{valid_up_to, error_len}).
  Result<std::string> DecodeContentUtf8(std::span<const uint32_t> ids) const;
  // decode_document_utf8 (byte-BPE): DocumentTooShort, ExpectedBos, ExpectedEos,
  // InteriorControlToken, then the interior as content, positions in document terms.
  Result<std::string> DecodeDocumentUtf8(std::span<const uint32_t> ids) const;

 private:
  TokenizerKind kind_ = TokenizerKind::kLiteral;
  std::vector<std::string> pieces_;
  std::vector<std::pair<uint32_t, uint32_t>> merges_;
  std::vector<std::string> expansions_;  // byte-BPE: bytes of training id 0..256+n
};

// Strict UTF-8 validation with Rust's String::from_utf8 rules: no overlong forms,
// no surrogates, nothing above U+10FFFF. Returns nullopt when valid, otherwise
// {valid_up_to, error_len} where error_len is empty when the input ends inside a
// character.
struct Utf8Error {
  size_t valid_up_to = 0;
  std::optional<size_t> error_len;
};
std::optional<Utf8Error> ValidateUtf8(std::string_view bytes);

}  // namespace kvrt
