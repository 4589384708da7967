#include "core/rust_format.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace kvrt {
namespace {

// Shortest round-trip decimal digits of a finite, nonzero |x| and the decimal
// exponent of the first digit: x = 0.d1d2..dn * 10^(exponent + 1).
struct ShortestDigits {
  std::string digits;
  int exponent = 0;
};

ShortestDigits Shortest(double magnitude) {
  char buffer[64];
  const auto result =
      std::to_chars(buffer, buffer + sizeof buffer, magnitude, std::chars_format::scientific);
  const std::string_view text(buffer, static_cast<size_t>(result.ptr - buffer));
  const size_t e = text.find('e');
  ShortestDigits out;
  for (char c : text.substr(0, e)) {
    if (c != '.') out.digits += c;
  }
  out.exponent = std::stoi(std::string(text.substr(e + 1)));
  return out;
}

std::string PlainDecimal(const ShortestDigits& d) {
  std::string out;
  if (d.exponent >= 0) {
    const size_t integer_digits = static_cast<size_t>(d.exponent) + 1;
    std::string digits = d.digits;
    if (digits.size() < integer_digits) digits.append(integer_digits - digits.size(), '0');
    out = digits.substr(0, integer_digits);
    if (digits.size() > integer_digits) out += "." + digits.substr(integer_digits);
  } else {
    out = "0." + std::string(static_cast<size_t>(-d.exponent - 1), '0') + d.digits;
  }
  return out;
}

}  // namespace

std::string RustDisplay(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  const std::string sign = std::signbit(x) ? "-" : "";
  if (x == 0.0) return sign + "0";
  return sign + PlainDecimal(Shortest(std::fabs(x)));
}

std::string RustDebug(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  const std::string sign = std::signbit(x) ? "-" : "";
  const double magnitude = std::fabs(x);
  if (magnitude == 0.0) return sign + "0.0";
  const ShortestDigits d = Shortest(magnitude);
  if (magnitude >= 1e16 || magnitude < 1e-4) {
    std::string mantissa = d.digits.substr(0, 1);
    if (d.digits.size() > 1) mantissa += "." + d.digits.substr(1);
    return sign + mantissa + "e" + std::to_string(d.exponent);
  }
  std::string text = PlainDecimal(d);
  if (text.find('.') == std::string::npos) text += ".0";
  return sign + text;
}

std::string RustQuoted(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\0':
        out += "\\0";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buffer[16];
          std::snprintf(buffer, sizeof buffer, "\\u{%x}", c);
          out += buffer;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string Hex64(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

}  // namespace kvrt
