// Constructors for the typed errors of llama2.c checkpoints and tokenizer files.
// Truncated reuses the LLMCP35 variant (with the byte counts when they are known);
// the others are llama2.c's own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kvrt/error.h"

namespace kvrt::llama2c {

Error Truncated(std::string_view context, uint64_t expected, uint64_t actual);
// A header field out of range: zero, negative or too large.
Error InvalidHeaderValue(std::string_view field, int64_t value, std::string_view requirement);
Error InconsistentHeader(std::string reason);
Error TrailingBytes(uint64_t expected, uint64_t actual);
Error InvalidTokenLength(uint64_t token_id, int64_t length, std::string_view requirement);

}  // namespace kvrt::llama2c
