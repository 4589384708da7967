#include "number_text.h"

#include <algorithm>
#include <charconv>
#include <system_error>

namespace kvrt::cli {
namespace {

bool IsDecimalDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return IsDecimalDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// from_chars over the whole of `text`, which the caller has checked holds digits only.
std::optional<uint64_t> WholeUnsigned(std::string_view text, int base) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<uint64_t> ParseDecimalU64(std::string_view text) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), IsDecimalDigit)) return std::nullopt;
  return WholeUnsigned(text, 10);
}

std::optional<uint64_t> ParseHexU64(std::string_view text) {
  const bool prefixed = text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const std::string_view digits = prefixed ? text.substr(2) : text;
  if (digits.empty() || digits.size() > 16 || !std::all_of(digits.begin(), digits.end(), IsHexDigit)) {
    return std::nullopt;
  }
  return WholeUnsigned(digits, 16);
}

std::optional<double> ParseDouble(std::string_view text) {
  // from_chars already refuses leading spaces and '+'; "inf"/"nan" pass and are
  // left to the option's own range check.
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace kvrt::cli
