// SentencePiece (llama.cpp "SPM") encoding and token bytes; see sentencepiece.h.
#include "tokenizer/sentencepiece.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "tokenizer/pair_merging.h"

namespace kvrt::tokenizer {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// The UTF-8 sequence length its lead byte announces; continuation and invalid
// lead bytes count as one byte, so any byte string splits into symbols.
size_t Utf8LengthFromLead(uint8_t lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

// "<0x0A>" for byte 0x0A: the spelling GGUF byte tokens use.
std::string BytePiece(uint8_t byte) {
  constexpr char kHex[] = "0123456789ABCDEF";
  return {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

Result<SentencePieceEncoder> SentencePieceEncoder::Build(const TokenTable& table,
                                                         std::optional<uint32_t> unk,
                                                         bool add_space_prefix) {
  SentencePieceEncoder encoder;
  encoder.add_space_prefix_ = add_space_prefix;
  for (uint32_t byte = 0; byte < 256; ++byte) {
    std::optional<uint32_t> id = table.Find(BytePiece(static_cast<uint8_t>(byte)));
    if (!id) id = table.Find(std::string(1, static_cast<char>(byte)));
    if (!id) id = unk;
    if (!id) {
      return Fail(ErrorCode::kMissingByteTokens,
                  {{"byte", uint64_t{byte}}, {"vocabulary_size", uint64_t{table.size()}}},
                  "the SentencePiece vocabulary has no token for byte " +
                      BytePiece(static_cast<uint8_t>(byte)) + " and no unknown token");
    }
    encoder.byte_ids_[byte] = *id;
  }
  return encoder;
}

void SentencePieceEncoder::Encode(const TokenTable& table, std::string_view text,
                                  std::vector<uint32_t>& ids) const {
  if (text.empty()) return;  // no space prefix either: "" encodes to nothing
  std::string escaped;
  escaped.reserve(text.size() + text.size() / 2 + kSpaceMark.size());
  if (add_space_prefix_) escaped += kSpaceMark;
  for (const char c : text) {
    if (c == ' ') {
      escaped += kSpaceMark;
    } else {
      escaped += c;
    }
  }
  if (escaped.size() > UINT32_MAX) throw std::length_error("SentencePiece input too long");
  const std::string_view view(escaped);

  std::vector<uint32_t> lengths;
  lengths.reserve(escaped.size());
  for (size_t offset = 0; offset < escaped.size(); offset += lengths.back()) {
    lengths.push_back(static_cast<uint32_t>(std::min(
        Utf8LengthFromLead(static_cast<uint8_t>(escaped[offset])), escaped.size() - offset)));
  }
  std::vector<MergeSymbol> symbols = LinkSymbols(lengths);
  // The pair whose concatenation is the highest-scoring token merges first.
  MergePairs<float>(
      symbols,
      [&](int64_t left, int64_t right) -> std::optional<float> {
        const MergeSymbol& l = symbols[left];
        const std::optional<uint32_t> id =
            table.Find(view.substr(l.begin, l.length + symbols[right].length));
        if (!id) return std::nullopt;
        return table.score(*id);
      },
      [](float a, float b) { return a > b; }, [](MergeSymbol&, float) {});

  for (int64_t i = 0; i >= 0; i = symbols[i].next) {
    const std::string_view piece = view.substr(symbols[i].begin, symbols[i].length);
    if (const std::optional<uint32_t> id = table.Find(piece)) {
      ids.push_back(*id);
    } else {
      for (const char byte : piece) ids.push_back(byte_ids_[static_cast<uint8_t>(byte)]);
    }
  }
}

Result<std::vector<std::string>> SentencePieceTokenBytes(const TokenTable& table) {
  std::vector<std::string> bytes(table.size());
  for (uint32_t id = 0; id < table.size(); ++id) {
    const std::string& text = table.text(id);
    switch (table.type(id)) {
      case TokenType::kNormal:
        for (size_t at = 0; at < text.size();) {
          if (text.compare(at, kSpaceMark.size(), kSpaceMark) == 0) {
            bytes[id] += ' ';
            at += kSpaceMark.size();
          } else {
            bytes[id] += text[at++];
          }
        }
        break;
      case TokenType::kUserDefined:
        bytes[id] = text;
        break;
      case TokenType::kByte: {
        const int high = text.size() == 6 ? HexDigit(text[3]) : -1;
        const int low = text.size() == 6 ? HexDigit(text[4]) : -1;
        if (text.compare(0, 3, "<0x") != 0 || high < 0 || low < 0 || text[5] != '>') {
          return Fail(ErrorCode::kInvalidByteToken, {{"token_id", uint64_t{id}}},
                      "SentencePiece byte token " + std::to_string(id) + " is not spelled <0xXX>");
        }
        bytes[id] = std::string(1, static_cast<char>(high * 16 + low));
        break;
      }
      case TokenType::kUndefined:
      case TokenType::kUnknown:
      case TokenType::kControl:
      case TokenType::kUnused:
        break;  // no content bytes
    }
  }
  return bytes;
}

}  // namespace kvrt::tokenizer
