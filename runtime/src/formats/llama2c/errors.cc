#include "formats/llama2c/errors.h"

namespace kvrt::llama2c {

Error Truncated(std::string_view context, uint64_t expected, uint64_t actual) {
  return Error(ErrorCode::kTruncated,
               {{"context", std::string(context)}, {"expected", expected}, {"actual", actual}},
               "llama2.c file is truncated while reading " + std::string(context) + ": needs " +
                   std::to_string(expected) + " bytes, has " + std::to_string(actual));
}

Error InvalidHeaderValue(std::string_view field, int64_t value, std::string_view requirement) {
  return Error(ErrorCode::kInvalidHeaderValue, {{"field", std::string(field)}, {"value", value}},
               "llama2.c header field " + std::string(field) + " is " + std::to_string(value) +
                   ", but " + std::string(requirement));
}

Error InconsistentHeader(std::string reason) {
  return Error(ErrorCode::kInconsistentHeader, {{"reason", reason}},
               "inconsistent llama2.c header: " + reason);
}

Error TrailingBytes(uint64_t expected, uint64_t actual) {
  return Error(ErrorCode::kTrailingBytes, {{"expected", expected}, {"actual", actual}},
               "llama2.c checkpoint header describes " + std::to_string(expected) +
                   " bytes, but the file has " + std::to_string(actual) +
                   " (a different layout, or an untied classifier under a positive vocab_size)");
}

Error InvalidTokenLength(uint64_t token_id, int64_t length, std::string_view requirement) {
  return Error(ErrorCode::kInvalidTokenLength, {{"token_id", token_id}, {"length", length}},
               "llama2.c token " + std::to_string(token_id) + " has byte length " +
                   std::to_string(length) + ", but " + std::string(requirement));
}

}  // namespace kvrt::llama2c
