// The text algorithms of the llama2.c tokenizer (run.c's encode and decode), over
// a vocabulary of scored pieces. Kept apart from the Tokenizer class so the exact
// run.c behaviour — code-point lookups, byte fallback, the merge order — reads in
// one place.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kvrt::llama2c {

inline constexpr uint32_t kUnknownId = 0;
inline constexpr uint32_t kBosId = 1;
inline constexpr uint32_t kEosId = 2;
inline constexpr uint32_t kFirstByteId = 3;  // byte b is token b + 3
inline constexpr uint32_t kMinimumVocabulary = kFirstByteId + 256;

// The byte of a raw-byte piece "<0xBB>" (two hex digits, either case), else nullopt.
std::optional<uint8_t> RawByte(std::string_view piece);
// The canonical raw-byte piece of `byte`: "<0x0A>".
std::string RawBytePiece(uint8_t byte);

// Piece lookups like run.c's bsearch over the sorted vocabulary. `sorted_ids`
// lists the ids by piece bytes, equal pieces by id, so the lowest id of a
// repeated piece wins (bsearch leaves that unspecified).
std::vector<uint32_t> SortPieceIds(std::span<const std::string> pieces);
std::optional<uint32_t> FindPiece(std::span<const std::string> pieces,
                                  std::span<const uint32_t> sorted_ids, std::string_view text);

// run.c's encode without BOS/EOS: the dummy " " prefix when `text` is non-empty,
// one lookup per UTF-8 code point (up to 4 bytes, stray continuation bytes on
// their own) with byte fallback, then repeatedly the adjacent pair whose merged
// piece has the highest score (the leftmost on ties; scores at or below -1e10
// never merge) until no pair merges.
std::vector<uint32_t> Encode(std::span<const std::string> pieces, std::span<const float> scores,
                             std::span<const uint32_t> sorted_ids, std::string_view text);

}  // namespace kvrt::llama2c
