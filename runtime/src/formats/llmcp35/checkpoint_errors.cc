#include "formats/llmcp35/checkpoint_errors.h"

#include <cstdio>
#include <system_error>
#include <utility>

#include "core/rust_format.h"

namespace kvrt::llmcp35 {
namespace {

std::string Str(std::string_view text) { return std::string(text); }

std::string Hex(uint64_t value, int digits) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "%0*llx", digits, static_cast<unsigned long long>(value));
  return buffer;
}

}  // namespace

std::string NamesDebug(std::span<const std::string> names) {
  std::string text = "[";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) text += ", ";
    text += RustQuoted(names[i]);
  }
  return text + "]";
}

Error Truncated(std::string_view context) {
  return Error(ErrorCode::kTruncated, {{"context", Str(context)}},
               "checkpoint is truncated while reading " + Str(context));
}

Error InvalidMagic() {
  return Error(ErrorCode::kInvalidMagic, {}, "checkpoint magic is not LLMCP35");
}

Error UnsupportedVersion(uint16_t found) {
  return Error(
      ErrorCode::kUnsupportedVersion, {{"found", uint64_t{found}}},
      "checkpoint schema version " + std::to_string(found) + " is unsupported; expected 1");
}

Error UnsupportedEndianness(uint32_t found) {
  return Error(ErrorCode::kUnsupportedEndianness, {{"found", uint64_t{found}}},
               "checkpoint endian marker 0x" + Hex(found, 8) + " is unsupported");
}

Error FileExtent(uint64_t header, uint64_t payload, uint64_t actual) {
  return Error(
      ErrorCode::kFileExtent, {{"header", header}, {"payload", payload}, {"actual", actual}},
      "checkpoint declares " + std::to_string(header) + " header bytes and " +
          std::to_string(payload) + " payload bytes, but file length is " + std::to_string(actual));
}

Error ChecksumMismatch(uint64_t stored, uint64_t computed) {
  return Error(ErrorCode::kChecksumMismatch, {{"expected", stored}, {"actual", computed}},
               "checkpoint checksum mismatch: stored fnv1a64:" + Hex(stored, 16) +
                   ", computed fnv1a64:" + Hex(computed, 16));
}

Error UnsupportedTokenizerLayout(uint16_t found) {
  return Error(ErrorCode::kUnsupportedTokenizerLayout, {{"found", uint64_t{found}}},
               "tokenizer layout version " + std::to_string(found) + " is unsupported");
}

Error UnsupportedRngAlgorithm(uint16_t found) {
  return Error(ErrorCode::kUnsupportedRngAlgorithm, {{"found", uint64_t{found}}},
               "sampling RNG algorithm version " + std::to_string(found) + " is unsupported");
}

Error UnknownTokenizerKind(uint8_t tag) {
  return Error(ErrorCode::kUnknownTokenizerKind, {{"tag", uint64_t{tag}}},
               "checkpoint tokenizer kind tag " + std::to_string(tag) + " is unknown");
}

Error UnknownTensorRole(uint8_t tag) {
  return Error(ErrorCode::kUnknownTensorRole, {{"tag", uint64_t{tag}}},
               "checkpoint tensor role tag " + std::to_string(tag) + " is unknown");
}

Error UnknownDType(uint8_t tag) {
  return Error(ErrorCode::kUnknownDType, {{"tag", uint64_t{tag}}},
               "checkpoint dtype tag " + std::to_string(tag) + " is unknown");
}

Error InvalidUtf8Field(std::string_view context) {
  return Error(ErrorCode::kInvalidUtf8, {{"context", Str(context)}},
               "checkpoint " + Str(context) + " is not valid UTF-8");
}

Error SizeOverflow(std::string_view context) {
  return Error(ErrorCode::kSizeOverflow, {{"context", Str(context)}},
               "checkpoint " + Str(context) + " does not fit the supported size range");
}

Error Allocation(std::string_view context) {
  return Error(ErrorCode::kAllocation, {{"context", Str(context)}},
               "checkpoint could not allocate " + Str(context));
}

Error VocabularyMismatch(uint64_t tokenizer, uint64_t decoder) {
  return Error(ErrorCode::kVocabularyMismatch, {{"tokenizer", tokenizer}, {"decoder", decoder}},
               "tokenizer vocabulary " + std::to_string(tokenizer) +
                   " does not match decoder vocabulary " + std::to_string(decoder));
}

Error StepMismatch(uint64_t selected, uint64_t optimizer) {
  return Error(ErrorCode::kStepMismatch, {{"selected", selected}, {"optimizer", optimizer}},
               "selected checkpoint step " + std::to_string(selected) +
                   " does not match optimizer step " + std::to_string(optimizer));
}

Error OptimizerNames(std::vector<std::string> expected, std::vector<std::string> actual) {
  std::string message =
      "optimizer names " + NamesDebug(actual) + " do not match model names " + NamesDebug(expected);
  return Error(ErrorCode::kOptimizerNames,
               {{"expected", std::move(expected)}, {"actual", std::move(actual)}},
               std::move(message));
}

Error OptimizerShape(const std::string& name, std::span<const size_t> model,
                     std::span<const size_t> optimizer) {
  // Vec<usize> payloads render bare, like an identifier.
  return Error(ErrorCode::kOptimizerShape,
               {{"name", name},
                {"model", Identifier{ShapeDebug(model)}},
                {"optimizer", Identifier{ShapeDebug(optimizer)}}},
               "optimizer shape " + ShapeDebug(optimizer) + " for " + RustQuoted(name) +
                   " does not match model shape " + ShapeDebug(model));
}

Error Layout(std::string message) {
  std::string display = "invalid checkpoint layout: " + message;
  return Error(ErrorCode::kLayout, {{"", std::move(message)}}, std::move(display));
}

Error NonCanonical(std::string message) {
  std::string display = "non-canonical checkpoint: " + message;
  return Error(ErrorCode::kNonCanonical, {{"", std::move(message)}}, std::move(display));
}


}  // namespace kvrt::llmcp35
