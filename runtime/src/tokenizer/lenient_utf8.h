// Text as llama.cpp's byte-level BPE path reads it: code points by the lead
// byte's announcement alone (overlong forms and surrogates pass; no range
// checks), every byte that starts no such character read as U+FFFD, and every
// character written back in its shortest UTF-8 form. Encoding through this view
// is what makes kvrt's pieces equal llama.cpp's for any input bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvrt::tokenizer {

// The length of the character at `at`: the lead byte plus the continuation
// bytes it announces, or 0 when there is none (a continuation or F8..FF lead,
// or a sequence cut short).
size_t LenientCharLength(std::string_view text, size_t at);

// The code point of the `length`-byte character at `at` (up to 0x1FFFFF).
uint32_t LenientCodepoint(std::string_view text, size_t at, size_t length);

// The text llama.cpp encodes for `text`: unreadable bytes as U+FFFD, characters
// in their shortest form (a code point above U+10FFFF, which llama.cpp cannot
// write back, keeps its bytes). nullopt when that is `text` itself, as for all
// valid UTF-8. Throws only std::bad_alloc / std::length_error.
std::optional<std::string> RepairUtf8(std::string_view text);

}  // namespace kvrt::tokenizer
