// Strict parsing of the numbers a user types on the command line. Whatever
// strtoull/strtod would quietly accept and reinterpret is refused instead:
// leading spaces, signs (" -1" wrapping to 2^64-1), a leading 0 read as octal,
// trailing garbage, overflow.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kvrt::cli {

// One or more decimal digits and nothing else ("010" is ten); nullopt otherwise or on overflow.
std::optional<uint64_t> ParseDecimalU64(std::string_view text);

// 1..16 hex digits, optionally after one "0x"/"0X" ("0x0x1", "-1", "0x" are refused).
// The prefix is optional because the golden files and the reference crate write
// RNG states as bare 16-digit hex.
std::optional<uint64_t> ParseHexU64(std::string_view text);

// A decimal floating-point number in std::from_chars' general format: an optional
// '-' then digits, '.', exponent; no leading space or '+', no hex floats.
std::optional<double> ParseDouble(std::string_view text);

}  // namespace kvrt::cli
