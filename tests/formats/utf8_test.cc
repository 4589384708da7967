// ValidateUtf8 against the rules of Rust's String::from_utf8: valid_up_to is the
// longest valid prefix, error_len is Some(n) for an invalid sequence of n bytes
// and None when the input ends inside a character.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "kvrt/tokenizer.h"

namespace kvrt {
namespace {

struct Case {
  std::string bytes;
  std::optional<size_t> valid_up_to;  // nullopt: valid
  std::optional<size_t> error_len;
};

TEST(Utf8Test, MatchesRustFromUtf8) {
  const Case cases[] = {
      {"", std::nullopt, std::nullopt},
      {"plain ascii", std::nullopt, std::nullopt},
      {"\xd1\x82\x20\xf0\x9f\xa6\x80", std::nullopt, std::nullopt},  // т 🦀
      {"\xef\xbf\xbf\xf4\x8f\xbf\xbf", std::nullopt, std::nullopt},  // U+FFFF, U+10FFFF
      {"\xed\x9f\xbf\xee\x80\x80", std::nullopt, std::nullopt},      // around the surrogates
      {std::string("a\0b", 3), std::nullopt, std::nullopt},
      {"\x20\xd0", 1, std::nullopt},  // [258] in ch39
      {"\xd1", 0, std::nullopt},
      {"\xd1\xc2", 0, 1},
      {"\xff\xfe", 0, 1},
      {"\x80", 0, 1},      // lone continuation
      {"\xc0\x80", 0, 1},  // overlong lead
      {"\xc1\xbf", 0, 1},
      {"\xe0\x80\x80", 0, 1},         // overlong three-byte form
      {"\xe0\xa0", 0, std::nullopt},  // valid so far, then the end
      {"\xe0\xa0\x41", 0, 2},
      {"\xed\xa0\x80", 0, 1},      // surrogate U+D800
      {"\xf0\x80\x80\x80", 0, 1},  // overlong four-byte form
      {"\xf0\x90\x80", 0, std::nullopt},
      {"\xf0\x90\x80\x41", 0, 3},
      {"\xf4\x90\x80\x80", 0, 1},  // above U+10FFFF
      {"\xf5\x80\x80\x80", 0, 1},
      {"ab\xe2\x82", 2, std::nullopt},
      {"ab\xe2\x82\xac\xe2", 5, std::nullopt},
      {"ab\xe2\x28\xa1", 2, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.bytes));
    const std::optional<Utf8Error> error = ValidateUtf8(c.bytes);
    if (!c.valid_up_to) {
      EXPECT_FALSE(error.has_value());
      continue;
    }
    ASSERT_TRUE(error.has_value());
    EXPECT_EQ(error->valid_up_to, *c.valid_up_to);
    EXPECT_EQ(error->error_len, c.error_len);
  }
}

TEST(Utf8Test, AgreesWithADirectCodePointDecoderOnAllShortSequences) {
  // Every 1- and 2-byte input and every 3-byte input with a fixed tail: a decoder
  // that computes code points and rejects overlongs, surrogates and > U+10FFFF
  // must agree on validity.
  auto decodes = [](const std::string& s) {
    size_t i = 0;
    while (i < s.size()) {
      const auto b0 = static_cast<uint8_t>(s[i]);
      size_t n = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
      if (n == 0 || i + n > s.size()) return false;
      uint32_t cp = n == 1 ? b0 : b0 & (0x7F >> n);
      for (size_t k = 1; k < n; ++k) {
        const auto b = static_cast<uint8_t>(s[i + k]);
        if ((b & 0xC0) != 0x80) return false;
        cp = (cp << 6) | (b & 0x3F);
      }
      const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
      if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
      i += n;
    }
    return true;
  };
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      for (const std::string& s :
           {std::string(1, static_cast<char>(a)),
            std::string{static_cast<char>(a), static_cast<char>(b)},
            std::string{static_cast<char>(a), static_cast<char>(b), '\x80'},
            std::string{static_cast<char>(a), static_cast<char>(b), '\x80', '\xbf'}}) {
        ASSERT_EQ(!ValidateUtf8(s).has_value(), decodes(s)) << ::testing::PrintToString(s);
      }
    }
  }
}

}  // namespace
}  // namespace kvrt
