// Tokenizers stored in LLMCP35 checkpoints (spec/checkpoint.md §7.1, §11):
// literal-u32 (ordered byte-string pieces, no encoder) and byte-BPE (ordered merge
// pairs; BOS = 0, EOS = 1, byte b = b + 2, merge rank r = 258 + r); and the
// llama2.c tokenizer.bin vocabulary (scored pieces; <unk> = 0, BOS = 1, EOS = 2,
// byte b = b + 3 as the piece "<0xBB>"), which encodes exactly like run.c; and
// the two tokenizers GGUF files carry (SentencePiece and GPT-2 byte-level BPE,
// built from a VocabularyData by FromVocabulary, encoding like llama.cpp).
//
// Every text path is strict: decoding to text fails with InvalidUtf8 instead of
// replacing bytes, like the reference.
//
// Special tokens: a GGUF vocabulary's control tokens ("<|eot_id|>", "<s>",
// "<|im_start|>") have a spelling, and a prompt may spell them. Encoding reads
// such text as plain text by default, as it must for untrusted input (a user who
// types "<|eot_id|>" does not end the turn); SpecialTokens::kParse turns the
// spellings into the tokens, as llama.cpp's parse_special does, for text the
// caller built itself (a rendered chat template). User-defined tokens (Qwen's
// "<think>") are their own ids either way, as in llama.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvrt/error.h"

namespace kvrt {

enum class TokenizerKind : uint8_t {
  kLiteral = 1,        // "literal-u32"
  kByteBpe = 2,        // "byte-bpe"
  kLlama2c = 3,        // "llama2c" (tokenizer.bin; never stored in an LLMCP35 checkpoint)
  kSentencePiece = 4,  // "sentencepiece" (GGUF tokenizer.ggml.model "llama")
  kGpt2Bpe = 5,        // "gpt2-bpe" (GGUF tokenizer.ggml.model "gpt2")
};

// How an encoder reads text that spells a special token (see above).
enum class SpecialTokens : uint8_t {
  kAsText,  // plain text: "<|eot_id|>" is the characters '<', '|', 'e', ...
  kParse,   // the control and unknown tokens it spells become those tokens
};

// A tokenizer is an immutable value: copies share its tables.
class Tokenizer {
 public:
  struct Impl;  // the tables, opaque outside the library

  // An empty literal tokenizer (vocabulary 0); real ones come from the factories.
  Tokenizer();
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

  // A literal tokenizer over `pieces` (id i = piece i). Fails with
  // Tokenizer("literal token ID i repeats an earlier byte spelling") on a repeat, or
  // when the list or a piece is empty.
  static Result<Tokenizer> Literal(std::vector<std::string> pieces);
  // A byte-BPE tokenizer from training-space merge pairs in rank order; fails with
  // UnknownMergeOperand{rank, token_id} or DuplicateMergePair{rank, left, right}.
  static Result<Tokenizer> ByteBpe(std::vector<std::pair<uint32_t, uint32_t>> merges);
  // A llama2.c vocabulary: piece i with merge score scores[i]. Needs the 3
  // control and 256 byte tokens run.c's byte fallback assumes
  // (MissingByteTokens{vocabulary_size}), equally many finite scores
  // (NonFiniteScore{token_id}; InvalidArgument on a count mismatch) and pieces of
  // at most max_token_length bytes (InvalidTokenLength{token_id, length}).
  static Result<Tokenizer> Llama2c(std::vector<std::string> pieces, std::vector<float> scores,
                                   uint32_t max_token_length);

  TokenizerKind kind() const;
  // "literal-u32", "byte-bpe", "llama2c", "sentencepiece" or "gpt2-bpe"
  std::string_view kind_name() const;
  size_t vocabulary_size() const;
  // Literal and llama2.c pieces (empty for byte-BPE) and training-space merges
  // (byte-BPE only).
  const std::vector<std::string>& pieces() const;
  const std::vector<std::pair<uint32_t, uint32_t>>& merges() const;
  // llama2.c merge scores (one per piece) and the longest piece the file declares.
  const std::vector<float>& scores() const;
  uint32_t max_token_length() const;
  // BOS and EOS ids (byte-BPE: 0 and 1; llama2.c: 1 and 2; literal: none; GGUF:
  // the file's, when it names them).
  std::optional<uint32_t> bos_id() const;
  std::optional<uint32_t> eos_id() const;
  // Whether a prompt starts with BOS (llama2.c yes; GGUF: the file's add_bos_token,
  // else yes for SentencePiece and no for GPT-2 BPE) and whether a sequence
  // should end with EOS (GGUF add_eos_token, else no; never for the others).
  bool add_bos() const;
  bool add_eos() const;
  // The ids that end a generated reply, in increasing order. GGUF: llama.cpp's
  // end-of-generation set, which it derives from the vocabulary: EOS, the end of
  // turn ("<|eot_id|>", "<|im_end|>", ...), end of message and the
  // fill-in-the-middle pad, repository and separator tokens, from the file's
  // keys or found by their text. Others: EOS, when there is one.
  std::span<const uint32_t> end_of_generation_ids() const;
  // The chat template the file carries (GGUF tokenizer.chat_template: the model's
  // Jinja text), if any; kvrt/chat.h renders conversations with it.
  std::optional<std::string_view> chat_template() const;

  // Content encoding of `text` (no BOS/EOS). Byte-BPE: bytes to ids, then one
  // left-to-right pass per merge rank. llama2.c: run.c's encode (a dummy leading
  // space when the text is non-empty, code points looked up with byte fallback,
  // then greedy merging of the best-scoring adjacent pair). A literal tokenizer
  // has no encoder and returns InvalidArgument. `special` matters for the GGUF
  // kinds only: the others' control tokens have no spelling.
  Result<std::vector<uint32_t>> EncodeContent(
      std::string_view text, SpecialTokens special = SpecialTokens::kAsText) const;
  // [BOS] + content + [EOS] (byte-BPE and llama2.c).
  Result<std::vector<uint32_t>> EncodeDocument(std::string_view text) const;
  // The ids a generation prompt starts from: content for byte-BPE (the reference
  // pipeline), [BOS] + content for llama2.c (run.c), [BOS if add_bos()] + content
  // for GGUF tokenizers (a text that starts by spelling BOS then has it twice,
  // as in llama.cpp).
  Result<std::vector<uint32_t>> EncodePrompt(
      std::string_view text, SpecialTokens special = SpecialTokens::kAsText) const;

  // Bytes of one id: a piece, a byte or a merge expansion. Control ids have no
  // bytes (ControlTokenInContent); ids past the vocabulary give UnknownToken.
  // llama2.c: every id has bytes (controls their pieces, <0xBB> its byte).
  // GGUF: control, unknown and unused ids have no bytes (an empty view, no error).
  Result<std::string_view> TokenBytes(uint32_t id, size_t position = 0) const;
  // The bytes a streaming decoder prints for `id` when it follows `previous`:
  // TokenBytes, except that llama2.c drops a piece's leading space right after BOS
  // (sentencepiece's rule, as in run.c's decode); GGUF SentencePiece drops it after
  // BOS and also with no previous id (the space its encoder prefixed).
  Result<std::string_view> TokenBytesAfter(std::optional<uint32_t> previous, uint32_t id,
                                           size_t position = 0) const;
  // decode_content: concatenated bytes, no UTF-8 check. Byte-BPE first scans for
  // control ids, then looks ids up (spec/checkpoint.md §11.2); llama2.c applies
  // the after-BOS rule of TokenBytesAfter.
  Result<std::string> DecodeContent(std::span<const uint32_t> ids) const;
  // decode_content_utf8: DecodeContent + strict UTF-8 (InvalidUtf8{valid_up_to, error_len}).
  Result<std::string> DecodeContentUtf8(std::span<const uint32_t> ids) const;
  // decode_document_utf8 (byte-BPE, llama2.c): DocumentTooShort, ExpectedBos, ExpectedEos,
  // InteriorControlToken, then the interior as content, positions in document terms.
  Result<std::string> DecodeDocumentUtf8(std::span<const uint32_t> ids) const;

 private:
  std::shared_ptr<const Impl> impl_;
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
