// One GGUF tokenizer: the validated token table, the special ids and flags, the
// decoded bytes of every token, and the encoder the vocabulary's model names.
// Tokenizer (kvrt/tokenizer.h) holds one of these, immutable and shared, for its
// kSentencePiece and kGpt2Bpe kinds.
//
// Differences from llama.cpp's tokenize and detokenize, all deliberate or not
// yet needed:
//   * special tokens are cut out of the input text before encoding as llama.cpp
//     does (tokenizer/special_tokens.h): user-defined ones always, control and
//     unknown ones when the caller parses special tokens. Every raw fragment
//     between them is encoded on its own, and for SentencePiece each gets the
//     space prefix, since llama.cpp prefixes the text after any special token. A
//     vocabulary whose general.name names phi-3 strips whitespace right of them
//     (llama.cpp's rstrip attribute for that model);
//   * an absent bos/eos/unk id stays absent (the GGUF reader substitutes
//     llama.cpp's per-model defaults when the key is missing);
//   * GPT-2 decoding is byte-exact: no clean_up_tokenization_spaces pass (" ," ->
//     ",", which llama.cpp's detokenize can apply to BPE vocabularies), so
//     decode(encode(s)) == s for valid UTF-8.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kvrt/error.h"
#include "tokenizer/byte_level_bpe.h"
#include "tokenizer/sentencepiece.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/vocabulary.h"

namespace kvrt::tokenizer {

class VocabularyTokenizer {
 public:
  // Validates `vocabulary` (TokenTable's checks, UnsupportedTokenizerModel{model},
  // UnsupportedPreTokenizer{pre}, SpecialTokenOutOfRange{role, token_id,
  // vocabulary_size}, then the encoder's own) and builds the tokenizer. Defaults
  // where a flag is absent follow llama.cpp: SentencePiece adds BOS, not EOS, and
  // prefixes a space; GPT-2 adds neither, except that the Llama 3 pre-tokenizers
  // add BOS.
  static Result<std::shared_ptr<const VocabularyTokenizer>> Build(VocabularyData vocabulary);

  bool is_sentencepiece() const { return std::holds_alternative<SentencePieceEncoder>(encoder_); }
  size_t size() const { return table_.size(); }
  const TokenTable& table() const { return table_; }
  std::optional<uint32_t> bos() const { return bos_; }
  std::optional<uint32_t> eos() const { return eos_; }
  std::optional<uint32_t> unk() const { return unk_; }
  std::optional<uint32_t> pad() const { return pad_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  // llama.cpp's end-of-generation set (tokenizer/end_of_generation.h), in id order.
  const std::vector<uint32_t>& end_of_generation() const { return end_of_generation_; }
  const std::optional<std::string>& chat_template() const { return chat_template_; }

  // Content ids of `text` (no BOS/EOS). Control-token text such as "<|eot_id|>"
  // is plain text unless `parse_special`.
  Result<std::vector<uint32_t>> Encode(std::string_view text, bool parse_special) const;
  // The content bytes of `id` (see SentencePieceTokenBytes / ByteLevelTokenBytes);
  // UnknownToken{position, token_id} past the vocabulary.
  Result<std::string_view> TokenBytes(uint32_t id, size_t position) const;
  // TokenBytes, except that a SentencePiece normal token loses the leading space
  // the encoder's space prefix put there when it starts the text: right after BOS,
  // or with no previous token at all (llama.cpp's detokenize strips it there too).
  Result<std::string_view> TokenBytesAfter(std::optional<uint32_t> previous, uint32_t id,
                                           size_t position) const;

 private:
  VocabularyTokenizer(TokenTable table,
                      std::variant<SentencePieceEncoder, ByteLevelBpeEncoder> encoder)
      : table_(std::move(table)), encoder_(std::move(encoder)) {}

  TokenTable table_;
  std::variant<SentencePieceEncoder, ByteLevelBpeEncoder> encoder_;
  std::vector<std::string> token_bytes_;  // id -> content bytes
  std::vector<SpecialToken> special_;  // in matching order
  std::vector<uint32_t> end_of_generation_;
  std::optional<std::string> chat_template_;
  std::optional<uint32_t> bos_, eos_, unk_, pad_;
  bool add_bos_ = false;
  bool add_eos_ = false;
  bool add_space_prefix_ = false;
};

}  // namespace kvrt::tokenizer
