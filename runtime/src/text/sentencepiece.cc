// SentencePiece (llama.cpp "SPM") encoding and token bytes; see sentencepiece.h.
#include "text/sentencepiece.h"

#include <algorithm>
#include <queue>
#include <stdexcept>
#include <string>
#include <utility>

namespace kvrt::text {
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

// A run of the text being merged; merged-away symbols keep length 0.
struct Symbol {
  uint32_t begin = 0;   // byte offset in the escaped text
  uint32_t length = 0;  // 0 once merged into its left neighbour
  int64_t prev = -1;    // index of the neighbouring live symbols, -1 at the ends
  int64_t next = -1;
};

// A candidate merge of two adjacent symbols whose concatenation is a token.
struct Bigram {
  float score;
  int64_t left;
  int64_t right;
  uint32_t length;  // left.length + right.length when queued; stale once either grows
};

// Highest score first; equal scores take the leftmost pair.
struct LowerPriority {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

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

  std::vector<Symbol> symbols;
  symbols.reserve(escaped.size());
  for (size_t offset = 0; offset < escaped.size();) {
    const size_t length = std::min(Utf8LengthFromLead(static_cast<uint8_t>(escaped[offset])),
                                   escaped.size() - offset);
    const auto index = static_cast<int64_t>(symbols.size());
    symbols.push_back({static_cast<uint32_t>(offset), static_cast<uint32_t>(length), index - 1,
                       offset + length == escaped.size() ? -1 : index + 1});
    offset += length;
  }

  std::vector<Bigram> storage;
  storage.reserve(symbols.size());
  std::priority_queue<Bigram, std::vector<Bigram>, LowerPriority> queue(LowerPriority{},
                                                                        std::move(storage));
  const auto try_add = [&](int64_t left, int64_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[left];
    const uint32_t length = l.length + symbols[right].length;
    if (const std::optional<uint32_t> id = table.Find(view.substr(l.begin, length))) {
      queue.push({table.score(*id), left, right, length});
    }
  };
  for (size_t i = 1; i < symbols.size(); ++i) try_add(int64_t(i) - 1, int64_t(i));

  while (!queue.empty()) {
    const Bigram bigram = queue.top();
    queue.pop();
    Symbol& left = symbols[bigram.left];
    Symbol& right = symbols[bigram.right];
    // Symbols only grow, so an unchanged total length means both are as queued.
    if (left.length == 0 || right.length == 0 || left.length + right.length != bigram.length) {
      continue;
    }
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = bigram.left;
    try_add(left.prev, bigram.left);
    try_add(bigram.left, left.next);
  }

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

}  // namespace kvrt::text
