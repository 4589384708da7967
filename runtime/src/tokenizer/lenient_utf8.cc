#include "tokenizer/lenient_utf8.h"

#include "kvrt/tokenizer.h"  // ValidateUtf8

namespace kvrt::tokenizer {
namespace {

bool IsContinuation(char c) { return (static_cast<uint8_t>(c) & 0xC0) == 0x80; }

constexpr uint32_t kMaxCodepoint = 0x10FFFF;

void AppendShortestForm(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

size_t LenientCharLength(std::string_view text, size_t at) {
  const auto lead = static_cast<uint8_t>(text[at]);
  size_t length = 0;
  if (lead < 0x80) return 1;
  if (lead < 0xC0) return 0;
  if (lead < 0xE0) {
    length = 2;
  } else if (lead < 0xF0) {
    length = 3;
  } else if (lead < 0xF8) {
    length = 4;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  for (size_t i = 1; i < length; ++i) {
    if (!IsContinuation(text[at + i])) return 0;
  }
  return length;
}

uint32_t LenientCodepoint(std::string_view text, size_t at, size_t length) {
  static constexpr uint8_t kLeadBits[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  uint32_t cp = static_cast<uint8_t>(text[at]) & kLeadBits[length];
  for (size_t i = 1; i < length; ++i) cp = cp << 6 | (static_cast<uint8_t>(text[at + i]) & 0x3F);
  return cp;
}

std::optional<std::string> RepairUtf8(std::string_view text) {
  if (!ValidateUtf8(text)) return std::nullopt;
  std::string repaired;
  repaired.reserve(text.size() + text.size() / 2);
  for (size_t at = 0; at < text.size();) {
    const size_t length = LenientCharLength(text, at);
    if (length == 0) {
      repaired += "\xEF\xBF\xBD";
      at += 1;
      continue;
    }
    const uint32_t cp = LenientCodepoint(text, at, length);
    if (cp <= kMaxCodepoint) {
      AppendShortestForm(cp, repaired);
    } else {
      repaired.append(text.substr(at, length));
    }
    at += length;
  }
  return repaired;
}

}  // namespace kvrt::tokenizer
