// SentencePiece encoding of a GGUF "llama" vocabulary, as llama.cpp's SPM
// tokenizer runs it (the algorithm, not its code):
//
//   1. every ' ' becomes U+2581 "▁", and a non-empty text gets one "▁" in front
//      (add_space_prefix, on unless the file turns it off);
//   2. the text is cut into UTF-8 characters (the length comes from the lead byte
//      alone, so stray continuation bytes and truncated sequences stay symbols);
//   3. adjacent symbols merge while some pair's concatenation is a vocabulary
//      token, always the pair whose token scores highest (the leftmost on ties);
//   4. each final symbol is its token, or else one byte-fallback token per byte
//      ("<0xXX>", else the one-byte token, else the unknown token).
//
// Only pairs that are tokens ever merge, so every merged symbol is a token and
// step 4 falls back for single characters only. (llama.cpp's "resegment" step,
// which splits a merged symbol that is not a token back into its parts, therefore
// never changes its output, and this implementation has no such step.)
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvrt/error.h"
#include "tokenizer/vocabulary.h"

namespace kvrt::tokenizer {

class SentencePieceEncoder {
 public:
  // Fails with MissingByteTokens{byte, vocabulary_size} when a byte has no
  // fallback token at all (no "<0xXX>", no one-byte token and no `unk`), so that
  // Encode can spell every input.
  static Result<SentencePieceEncoder> Build(const TokenTable& table, std::optional<uint32_t> unk,
                                            bool add_space_prefix);

  // Appends the ids of `text` to `ids`: O(n log n) in the text length. Throws only
  // std::bad_alloc / std::length_error.
  void Encode(const TokenTable& table, std::string_view text, std::vector<uint32_t>& ids) const;

 private:
  std::array<uint32_t, 256> byte_ids_{};  // byte -> its fallback token
  bool add_space_prefix_ = true;
};

// The bytes each token stands for in decoded content: a normal token's text with
// "▁" read as ' ', a byte token's byte, a user-defined token's text verbatim, and
// nothing for control, unknown, unused and undefined tokens (llama.cpp's
// token_to_piece without special tokens). Fails with InvalidByteToken{token_id}
// when a byte-type token is not spelled "<0xXX>".
Result<std::vector<std::string>> SentencePieceTokenBytes(const TokenTable& table);

}  // namespace kvrt::tokenizer
