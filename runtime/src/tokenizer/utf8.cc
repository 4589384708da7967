// Strict UTF-8 validation with the exact error report of Rust's
// String::from_utf8 (core::str::run_utf8_validation).
#include <cstdint>
#include <optional>
#include <string_view>

#include "kvrt/tokenizer.h"

namespace kvrt {
namespace {

bool IsContinuation(uint8_t byte) { return (byte & 0xC0) == 0x80; }

// Number of bytes of the sequence that starts with `lead`, or 0 when `lead` can
// never start a sequence (continuation bytes, the overlong leads C0/C1, F5..FF).
size_t SequenceWidth(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// The allowed range of the second byte depends on the lead: this is what
// excludes overlong forms (E0, F0), surrogates (ED) and code points above
// U+10FFFF (F4).
bool SecondByteAllowed(uint8_t lead, uint8_t second) {
  switch (lead) {
    case 0xE0:
      return second >= 0xA0 && second <= 0xBF;
    case 0xED:
      return second >= 0x80 && second <= 0x9F;
    case 0xF0:
      return second >= 0x90 && second <= 0xBF;
    case 0xF4:
      return second >= 0x80 && second <= 0x8F;
    default:
      return IsContinuation(second);
  }
}

}  // namespace

std::optional<Utf8Error> ValidateUtf8(std::string_view text) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  const size_t length = text.size();
  size_t index = 0;
  while (index < length) {
    const size_t start = index;
    const uint8_t lead = bytes[index];
    const size_t width = SequenceWidth(lead);
    if (width == 0) return Utf8Error{start, 1};
    // Like Rust, each following byte is checked as it is reached: running out of
    // input reports error_len = None, a bad byte at offset k reports Some(k).
    for (size_t k = 1; k < width; ++k) {
      if (start + k >= length) return Utf8Error{start, std::nullopt};
      const uint8_t next = bytes[start + k];
      const bool allowed = k == 1 ? SecondByteAllowed(lead, next) : IsContinuation(next);
      if (!allowed) return Utf8Error{start, k};
    }
    index = start + width;
  }
  return std::nullopt;
}

}  // namespace kvrt
