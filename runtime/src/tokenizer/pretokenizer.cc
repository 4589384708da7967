// PCRE2 behind PreTokenizer. PCRE2 is the only regex engine here with Unicode
// properties (\p{L}, \p{N}) and lookahead; std::regex has neither.
#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>
#include <new>
#include <string>
#include <utility>

namespace kvrt::tokenizer {

struct PreTokenizer::Code {
  pcre2_code* pattern = nullptr;
  ~Code() { pcre2_code_free(pattern); }
};

namespace {

constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

Error RegexError(std::string_view what, int code) {
  PCRE2_UCHAR message[256];
  pcre2_get_error_message(code, message, sizeof(message));
  return Error(ErrorCode::kTokenizer, {{"", std::string(reinterpret_cast<char*>(message))}},
               std::string(what) + ": " + reinterpret_cast<char*>(message));
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

}  // namespace

Result<PreTokenizer> PreTokenizer::ForName(std::string_view pre) {
  if (!pre.empty() && pre != "default" && pre != "gpt-2") {
    return Fail(ErrorCode::kUnsupportedPreTokenizer, {{"pre", std::string(pre)}},
                "the GGUF pre-tokenizer \"" + std::string(pre) + "\" is not supported");
  }
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  // MATCH_INVALID_UTF: bytes that are not UTF-8 are skipped over instead of
  // failing the whole match, so they end up in a gap piece.
  pcre2_code* pattern = pcre2_compile(
      reinterpret_cast<PCRE2_SPTR>(kGpt2Pattern.data()), kGpt2Pattern.size(),
      PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error_code, &error_offset, nullptr);
  if (pattern == nullptr) return Fail(RegexError("cannot compile the GPT-2 pattern", error_code));
  auto code = std::make_shared<Code>();
  code->pattern = pattern;
  // Without JIT support pcre2_match interprets the pattern: slower, same result.
  pcre2_jit_compile(pattern, PCRE2_JIT_COMPLETE);
  return PreTokenizer(std::move(code));
}

Result<std::vector<std::string_view>> PreTokenizer::Split(std::string_view text) const {
  // Match data is per call: pcre2_match writes into it.
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> match(
      pcre2_match_data_create_from_pattern(code_->pattern, nullptr));
  if (!match) throw std::bad_alloc();
  std::vector<std::string_view> pieces;
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t covered = 0;
  while (covered < text.size()) {
    const int found =
        pcre2_match(code_->pattern, subject, text.size(), covered, 0, match.get(), nullptr);
    if (found == PCRE2_ERROR_NOMATCH) break;
    if (found < 0) return Fail(RegexError("pre-tokenizing failed", found));
    const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match.get());
    // No alternative matches the empty string, so every match moves forward.
    if (span[0] > covered) pieces.push_back(text.substr(covered, span[0] - covered));
    pieces.push_back(text.substr(span[0], span[1] - span[0]));
    covered = span[1];
  }
  if (covered < text.size()) pieces.push_back(text.substr(covered));
  return pieces;
}

}  // namespace kvrt::tokenizer
