// The only distinctions the byte-level BPE pre-tokenizers draw between code
// points: whitespace, letters (\p{L}), numbers (\p{N}), punctuation (\p{P}) and
// everything else, as llama.cpp reads them from the Unicode character database
// (general category; PropList's White_Space set wins over it). Unassigned code
// points and those above U+10FFFF are kOther.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvrt::tokenizer {

enum class CodepointClass : uint8_t { kOther, kLetter, kNumber, kPunctuation, kWhitespace };

CodepointClass ClassOf(uint32_t codepoint);

// The generated table (codepoint_class_table.cc): runs of one class in code point
// order, each lasting until the next run's start.
struct CodepointRun {
  uint32_t start;
  CodepointClass value;
};
extern const CodepointRun kCodepointRuns[];
extern const size_t kCodepointRunCount;

}  // namespace kvrt::tokenizer
