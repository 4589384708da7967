// Byte-level BPE encoding of a GGUF "gpt2" vocabulary, as llama.cpp's BPE
// tokenizer runs it (the algorithm, not its code):
//
//   1. the pre-tokenizer (tokenizer/pretokenizer.h) cuts the text into pieces;
//      with its ignore_merges (Llama 3), a piece spelled like a token is that token;
//   2. each piece's bytes are spelled with GPT-2's byte-to-unicode table (byte b
//      becomes one printable code point, e.g. ' ' -> 'Ġ'), one symbol per byte;
//   3. within a piece, adjacent symbols merge by the merge list: always the pair
//      with the lowest rank (the leftmost on ties), until no listed pair is left;
//   4. each final symbol is its token; one that is not (a merge whose result is
//      not in the vocabulary) becomes the tokens of its one-byte spellings that
//      exist, as llama.cpp does.
//
// Text that is not valid UTF-8 is first repaired like llama.cpp repairs it
// (tokenizer/lenient_utf8.h: a byte that starts no character becomes U+FFFD, an
// overlong form its shortest one). So encoding is lossless for valid UTF-8 only.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kvrt/error.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/vocabulary.h"

namespace kvrt::tokenizer {

class ByteLevelBpeEncoder {
 public:
  // `merges` are "left right" strings in rank order; each side must be a token
  // (MalformedMerge{rank} without a separating space, UnknownMergeOperand{rank,
  // operand} otherwise). A pair listed twice keeps its first rank, like llama.cpp.
  static Result<ByteLevelBpeEncoder> Build(const TokenTable& table,
                                           const std::vector<std::string>& merges,
                                           PreTokenizer pre);

  // Appends the ids of `text` to `ids`: O(n log n) in the text length. Fails only
  // when PCRE2 does; otherwise throws only std::bad_alloc / std::length_error.
  Result<void> Encode(const TokenTable& table, std::string_view text,
                      std::vector<uint32_t>& ids) const;

 private:
  explicit ByteLevelBpeEncoder(PreTokenizer pre) : pre_(std::move(pre)) {}
  void EncodePiece(const TokenTable& table, std::string_view piece,
                   std::vector<uint32_t>& ids) const;
  // The token spelled like the whole of `piece`, if any.
  std::optional<uint32_t> WholePieceToken(const TokenTable& table, std::string_view piece) const;

  static constexpr uint32_t kNone = UINT32_MAX;
  PreTokenizer pre_;
  std::array<uint32_t, 256> byte_ids_{};  // byte -> token of its unicode spelling, or kNone
  // (left id << 32 | right id) -> merge rank
  std::unordered_map<uint64_t, uint32_t> ranks_;
  std::vector<uint32_t> merged_ids_;  // rank -> token of left + right, or kNone
};

// The bytes each token stands for in decoded content: a normal token's code
// points mapped back through the byte-to-unicode table (a code point outside it
// keeps its UTF-8 bytes), a user-defined token's text verbatim, and nothing for
// the other types (llama.cpp's token_to_piece without special tokens).
std::vector<std::string> ByteLevelTokenBytes(const TokenTable& table);

}  // namespace kvrt::tokenizer
