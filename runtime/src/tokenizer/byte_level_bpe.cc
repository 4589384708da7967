// Byte-level BPE (llama.cpp "BPE" with a GPT-2 pre-tokenizer); see byte_level_bpe.h.
#include "tokenizer/byte_level_bpe.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "tokenizer/lenient_utf8.h"
#include "tokenizer/pair_merging.h"

namespace kvrt::tokenizer {
namespace {

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the 68
// others (controls, space, DEL, NBSP, soft hyphen, ...) take U+0100.. in byte order.
constexpr std::array<uint16_t, 256> kByteToCodePoint = [] {
  std::array<uint16_t, 256> table{};
  uint16_t next = 256;
  for (int byte = 0; byte < 256; ++byte) {
    const bool printable =
        (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
    table[byte] = printable ? static_cast<uint16_t>(byte) : next++;
  }
  return table;
}();
constexpr size_t kCodePointLimit = 256 + 68;

// The inverse table: code point -> byte, -1 for code points outside it.
constexpr std::array<int16_t, kCodePointLimit> kCodePointToByte = [] {
  std::array<int16_t, kCodePointLimit> table{};
  table.fill(-1);
  for (int byte = 0; byte < 256; ++byte) table[kByteToCodePoint[byte]] = static_cast<int16_t>(byte);
  return table;
}();

// Appends the UTF-8 spelling of `byte`'s code point (all are below U+0800).
void AppendByteSpelling(uint8_t byte, std::string& out) {
  const uint16_t cp = kByteToCodePoint[byte];
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

Result<ByteLevelBpeEncoder> ByteLevelBpeEncoder::Build(const TokenTable& table,
                                                       const std::vector<std::string>& merges,
                                                       PreTokenizer pre) {
  if (merges.size() >= kNone) {
    return Fail(ErrorCode::kInvalidArgument, {{"merge_count", uint64_t{merges.size()}}},
                "a GGUF vocabulary of " + std::to_string(merges.size()) +
                    " merges does not fit 32-bit ranks");
  }
  ByteLevelBpeEncoder encoder(std::move(pre));
  for (int byte = 0; byte < 256; ++byte) {
    std::string spelling;
    AppendByteSpelling(static_cast<uint8_t>(byte), spelling);
    encoder.byte_ids_[byte] = table.Find(spelling).value_or(kNone);
  }
  encoder.ranks_.reserve(merges.size());
  encoder.merged_ids_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string_view merge = merges[rank];
    // The separator is the first space after the first byte, so a left operand
    // may itself be " " (llama.cpp splits the same way).
    const size_t space = merge.find(' ', 1);
    if (space == std::string_view::npos) {
      return Fail(
          ErrorCode::kMalformedMerge, {{"rank", uint64_t{rank}}},
          "GGUF merge rank " + std::to_string(rank) + " is not two tokens separated by a space");
    }
    const std::string_view left = merge.substr(0, space);
    const std::string_view right = merge.substr(space + 1);
    std::optional<uint32_t> operands[2] = {table.Find(left), table.Find(right)};
    for (const auto& [id, text] : {std::pair{operands[0], left}, std::pair{operands[1], right}}) {
      if (!id) {
        return Fail(ErrorCode::kUnknownMergeOperand,
                    {{"rank", uint64_t{rank}}, {"operand", std::string(text)}},
                    "GGUF merge rank " + std::to_string(rank) + " references \"" +
                        std::string(text) + "\", which is not a token");
      }
    }
    encoder.ranks_.emplace(uint64_t{*operands[0]} << 32 | *operands[1],
                           static_cast<uint32_t>(rank));
    std::string merged;
    merged.reserve(left.size() + right.size());
    merged.append(left).append(right);
    encoder.merged_ids_.push_back(table.Find(merged).value_or(kNone));
  }
  return encoder;
}

Result<void> ByteLevelBpeEncoder::Encode(const TokenTable& table, std::string_view text,
                                         std::vector<uint32_t>& ids) const {
  const std::optional<std::string> repaired = RepairUtf8(text);
  if (repaired) text = *repaired;
  Result<std::vector<std::string_view>> pieces = pre_.Split(text);
  if (!pieces) return Fail(std::move(pieces.error()));
  for (const std::string_view piece : *pieces) {
    if (pre_.ignores_merges()) {
      if (const std::optional<uint32_t> whole = WholePieceToken(table, piece)) {
        ids.push_back(*whole);
        continue;
      }
    }
    EncodePiece(table, piece, ids);
  }
  return {};
}

std::optional<uint32_t> ByteLevelBpeEncoder::WholePieceToken(const TokenTable& table,
                                                             std::string_view piece) const {
  std::string spelling;
  spelling.reserve(2 * piece.size());
  for (const char byte : piece) AppendByteSpelling(static_cast<uint8_t>(byte), spelling);
  return table.Find(spelling);
}

void ByteLevelBpeEncoder::EncodePiece(const TokenTable& table, std::string_view piece,
                                      std::vector<uint32_t>& ids) const {
  if (piece.size() > UINT32_MAX) throw std::length_error("byte-level BPE piece too long");
  std::vector<MergeSymbol> symbols = LinkSymbols(std::vector<uint32_t>(piece.size(), 1));
  for (size_t i = 0; i < piece.size(); ++i) symbols[i].id = byte_ids_[static_cast<uint8_t>(piece[i])];
  // The lowest-ranked merge of two tokens applies first.
  MergePairs<uint32_t>(
      symbols,
      [&](int64_t left, int64_t right) -> std::optional<uint32_t> {
        const uint32_t l = symbols[left].id, r = symbols[right].id;
        if (l == kNone || r == kNone) return std::nullopt;  // only tokens are merge operands
        const auto rank = ranks_.find(uint64_t{l} << 32 | r);
        if (rank == ranks_.end()) return std::nullopt;
        return rank->second;
      },
      [](uint32_t a, uint32_t b) { return a < b; },
      [&](MergeSymbol& merged, uint32_t rank) { merged.id = merged_ids_[rank]; });

  for (int64_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
    const MergeSymbol& symbol = symbols[i];
    if (symbol.id != kNone) {
      ids.push_back(symbol.id);
      continue;
    }
    std::string spelling;
    for (const char byte : piece.substr(symbol.begin, symbol.length)) {
      AppendByteSpelling(static_cast<uint8_t>(byte), spelling);
    }
    for (const char unit : spelling) {
      if (const std::optional<uint32_t> id = table.Find(std::string_view(&unit, 1))) {
        ids.push_back(*id);
      }
    }
  }
}

std::vector<std::string> ByteLevelTokenBytes(const TokenTable& table) {
  std::vector<std::string> bytes(table.size());
  for (uint32_t id = 0; id < table.size(); ++id) {
    const std::string& text = table.text(id);
    if (table.type(id) == TokenType::kUserDefined) {
      bytes[id] = text;
      continue;
    }
    if (table.type(id) != TokenType::kNormal) continue;  // no content bytes
    for (size_t at = 0; at < text.size();) {
      const size_t length = std::max<size_t>(LenientCharLength(text, at), 1);
      uint32_t cp = static_cast<uint8_t>(text[at]);
      if (length == 2) cp = (cp & 0x1F) << 6 | (static_cast<uint8_t>(text[at + 1]) & 0x3F);
      if (length <= 2 && cp < kCodePointLimit && kCodePointToByte[cp] >= 0) {
        bytes[id] += static_cast<char>(kCodePointToByte[cp]);
      } else {
        bytes[id].append(text, at, length);
      }
      at += length;
    }
  }
  return bytes;
}

}  // namespace kvrt::tokenizer
