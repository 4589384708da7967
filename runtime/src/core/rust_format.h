// Text formatting that matches the reference crate's Rust output, so that error
// messages and Debug strings can be compared with the reference's recorded text.
#pragma once

#include <string>
#include <string_view>

namespace kvrt {

// Rust `format!("{}", x)` for f64: shortest round-trip digits, never an exponent
// ("0", "-0.01", "0.000000001", "NaN", "inf").
std::string RustDisplay(double x);

// Rust `format!("{:?}", x)` for f64: at least one fractional digit ("0.0",
// "-10000.0"), exponent form below 1e-4 or from 1e16 on ("-1e-9").
std::string RustDebug(double x);

// Rust `format!("{:?}", s)` for a string: quoted, with \" \\ \n \r \t \0 escapes.
std::string RustQuoted(std::string_view s);

// "0x" followed by 16 lowercase hex digits (the reference's RNG-state format).
std::string Hex64(uint64_t value);

}  // namespace kvrt
