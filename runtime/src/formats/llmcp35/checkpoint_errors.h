// Constructors for the checkpoint reader's and writer's error variants, with the
// payload names and Display messages of the reference's CheckpointError
// (spec/checkpoint.md §9; fixtures/corrupt/verdicts.tsv).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/llmcp35/checkpoint.h"
#include "kvrt/error.h"

namespace kvrt::llmcp35 {

// Rust `{:?}` of a Vec<usize> ("[5, 4]") and of a Vec<String> (["a", "b"]).
template <class Range>
std::string ShapeDebug(const Range& shape) {
  std::string text = "[";
  bool first = true;
  for (const auto dimension : shape) {
    if (!first) text += ", ";
    first = false;
    text += std::to_string(dimension);
  }
  return text + "]";
}
std::string NamesDebug(std::span<const std::string> names);

// `context` is one of the reference's fixed field names ("fixed header", ...).
Error Truncated(std::string_view context);
Error InvalidMagic();
Error UnsupportedVersion(uint16_t found);
Error UnsupportedEndianness(uint32_t found);
Error FileExtent(uint64_t header, uint64_t payload, uint64_t actual);
Error ChecksumMismatch(uint64_t stored, uint64_t computed);
Error UnsupportedTokenizerLayout(uint16_t found);
Error UnsupportedRngAlgorithm(uint16_t found);
Error UnknownTokenizerKind(uint8_t tag);
Error UnknownTensorRole(uint8_t tag);
Error UnknownDType(uint8_t tag);
Error InvalidUtf8Field(std::string_view context);
Error SizeOverflow(std::string_view context);
Error Allocation(std::string_view context);
Error VocabularyMismatch(uint64_t tokenizer, uint64_t decoder);
Error StepMismatch(uint64_t selected, uint64_t optimizer);
Error OptimizerNames(std::vector<std::string> expected, std::vector<std::string> actual);
Error OptimizerShape(const std::string& name, std::span<const size_t> model,
                     std::span<const size_t> optimizer);
Error Layout(std::string message);
Error NonCanonical(std::string message);

}  // namespace kvrt::llmcp35
