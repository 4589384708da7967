// PCRE2 over collapsed text behind PreTokenizer (see pretokenizer.h). PCRE2 runs
// in byte mode here: the collapsed copy has one byte per code point, so match
// offsets are code point counts, as in llama.cpp's std::regex runs.
#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <utility>

#include "tokenizer/codepoint_class.h"
#include "tokenizer/lenient_utf8.h"

namespace kvrt::tokenizer {
namespace {

// llama.cpp's regexes (src/llama-vocab.cpp), as written there.
constexpr std::string_view kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr std::string_view kLlama3Regex =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Regex =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kDigitRegex = R"(\p{N})";

struct Family {
  std::span<const std::string_view> names;
  std::span<const std::string_view> regexes;
  bool ignores_merges;
  bool adds_bos;
};

constexpr std::string_view kDefaultNames[] = {"default"};
constexpr std::string_view kDefaultRegexes[] = {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2Regex,
                                                R"(\p{N}+)", "[0-9][0-9][0-9]"};
constexpr std::string_view kGpt2Names[] = {"gpt-2",      "phi-2",      "mpt",    "olmo",
                                           "jais",       "gigachat",   "jina-es", "jina-de",
                                           "jina-v1-en", "roberta-bpe"};
constexpr std::string_view kGpt2Regexes[] = {kGpt2Regex};
constexpr std::string_view kLlama3Names[] = {"llama3", "llama-v3", "llama-bpe", "falcon3"};
constexpr std::string_view kLlama3LikeNames[] = {"dbrx", "smaug-bpe"};
constexpr std::string_view kLlama3Regexes[] = {kLlama3Regex};
constexpr std::string_view kQwen2Names[] = {"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez"};
constexpr std::string_view kQwen2Regexes[] = {kQwen2Regex};
constexpr std::string_view kSmollmNames[] = {"smollm", "starcoder", "refact",    "command-r",
                                             "codeshell", "exaone",  "minerva-7b"};
constexpr std::string_view kSmollmRegexes[] = {kDigitRegex, kGpt2Regex};

constexpr Family kFamilies[] = {
    {kDefaultNames, kDefaultRegexes, false, false},
    {kGpt2Names, kGpt2Regexes, false, false},
    {kLlama3Names, kLlama3Regexes, true, true},
    {kLlama3LikeNames, kLlama3Regexes, false, false},
    {kQwen2Names, kQwen2Regexes, false, false},
    {kSmollmNames, kSmollmRegexes, false, false},
};

// The byte each non-ASCII code point becomes in the collapsed text (ASCII stays
// itself). Whitespace becomes a vertical tab, which \s matches.
constexpr char kCollapsedOther = '\xD0';
constexpr char kCollapsedNumber = '\xD1';
constexpr char kCollapsedLetter = '\xD2';
constexpr char kCollapsedPunctuation = '\xD3';
constexpr char kCollapsedWhitespace = '\x0B';

char Collapse(uint32_t codepoint) {
  if (codepoint < 0x80) return static_cast<char>(codepoint);
  switch (ClassOf(codepoint)) {
    case CodepointClass::kLetter: return kCollapsedLetter;
    case CodepointClass::kNumber: return kCollapsedNumber;
    case CodepointClass::kPunctuation: return kCollapsedPunctuation;
    case CodepointClass::kWhitespace: return kCollapsedWhitespace;
    case CodepointClass::kOther: break;
  }
  return kCollapsedOther;
}

// What a \p{..} class stands for in the collapsed text: its collapsed byte and
// its ASCII members (Unicode's general categories for ASCII).
std::string_view CategoryMembers(char category) {
  switch (category) {
    case 'L': return R"(\x{D2}A-Za-z)";
    case 'N': return R"(\x{D1}0-9)";
    case 'P': return R"(\x{D3}!-#%-*,-/:-;?-@\[-\]_\{\})";
    default: return {};
  }
}

// llama.cpp's regex with \p{L}, \p{N} and \p{P} rewritten for the collapsed
// text: inside a bracket their members join the class, outside they become one.
std::string CollapsedPattern(std::string_view regex) {
  std::string pattern;
  bool inside = false;
  for (size_t i = 0; i < regex.size(); ++i) {
    const char c = regex[i];
    const bool escaped = i > 0 && regex[i - 1] == '\\';
    if (c == '[' && !escaped) inside = true;
    if (c == ']' && !escaped) inside = false;
    if (c == '\\' && i + 4 < regex.size() && regex.substr(i + 1, 2) == "p{" && regex[i + 4] == '}') {
      if (const std::string_view members = CategoryMembers(regex[i + 3]); !members.empty()) {
        pattern += inside ? std::string(members) : "[" + std::string(members) + "]";
        i += 4;
        continue;
      }
    }
    pattern += c;
  }
  return pattern;
}

Error RegexError(std::string_view what, int code) {
  PCRE2_UCHAR message[256];
  pcre2_get_error_message(code, message, sizeof(message));
  return Error(ErrorCode::kTokenizer, {{"", std::string(reinterpret_cast<char*>(message))}},
               std::string(what) + ": " + reinterpret_cast<char*>(message));
}

struct CodeDeleter {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};
using Code = std::unique_ptr<pcre2_code, CodeDeleter>;

}  // namespace

struct PreTokenizer::Stages {
  std::vector<Code> regexes;
};

std::string PreTokenizer::SupportedNames() {
  std::string names;
  for (const Family& family : kFamilies) {
    for (const std::string_view name : family.names) {
      if (!names.empty()) names += ", ";
      names += name;
    }
  }
  return names;
}

Result<PreTokenizer> PreTokenizer::ForName(std::string_view pre) {
  // llama.cpp reads a missing name as "default" (and warns).
  const std::string_view name = pre.empty() ? "default" : pre;
  const Family* family = nullptr;
  for (const Family& candidate : kFamilies) {
    for (const std::string_view known : candidate.names) {
      if (known == name) family = &candidate;
    }
  }
  if (family == nullptr) {
    return Fail(ErrorCode::kUnsupportedPreTokenizer, {{"pre", std::string(pre)}},
                "the GGUF pre-tokenizer \"" + std::string(pre) +
                    "\" is not supported (supported: " + SupportedNames() + ")");
  }
  auto stages = std::make_shared<Stages>();
  for (const std::string_view regex : family->regexes) {
    const std::string pattern = CollapsedPattern(regex);
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    Code code(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), 0,
                            &error_code, &error_offset, nullptr));
    if (!code) return Fail(RegexError("cannot compile a pre-tokenizer regex", error_code));
    // Without JIT support pcre2_match interprets the pattern: slower, same result.
    pcre2_jit_compile(code.get(), PCRE2_JIT_COMPLETE);
    stages->regexes.push_back(std::move(code));
  }
  return PreTokenizer(std::move(stages), family->ignores_merges, family->adds_bos);
}

Result<std::vector<std::string_view>> PreTokenizer::Split(std::string_view text) const {
  // starts[i]: the byte offset of code point i (starts.back() = text.size()).
  std::vector<size_t> starts;
  std::string collapsed;
  starts.reserve(text.size() + 1);
  collapsed.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    // RepairUtf8 leaves every character readable; a stray byte counts as one.
    const size_t length = std::max<size_t>(LenientCharLength(text, at), 1);
    starts.push_back(at);
    collapsed += Collapse(length == 1 ? static_cast<uint8_t>(text[at])
                                      : LenientCodepoint(text, at, length));
    at += length;
  }
  starts.push_back(text.size());

  // Piece lengths in code points; each regex splits every piece of the last.
  std::vector<size_t> pieces, next;
  if (!collapsed.empty()) pieces.push_back(collapsed.size());
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> match;
  for (const Code& regex : stages_->regexes) {
    // Match data is per call: pcre2_match writes into it.
    match.reset(pcre2_match_data_create_from_pattern(regex.get(), nullptr));
    if (!match) throw std::bad_alloc();
    next.clear();
    size_t piece_start = 0;
    for (const size_t piece_length : pieces) {
      const auto subject = reinterpret_cast<PCRE2_SPTR>(collapsed.data() + piece_start);
      size_t covered = 0;
      while (covered < piece_length) {
        const int found =
            pcre2_match(regex.get(), subject, piece_length, covered, 0, match.get(), nullptr);
        if (found == PCRE2_ERROR_NOMATCH) break;
        if (found < 0) return Fail(RegexError("pre-tokenizing failed", found));
        const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match.get());
        if (span[1] == span[0]) break;  // none of these regexes matches the empty string
        if (span[0] > covered) next.push_back(span[0] - covered);
        next.push_back(span[1] - span[0]);
        covered = span[1];
      }
      if (covered < piece_length) next.push_back(piece_length - covered);
      piece_start += piece_length;
    }
    pieces.swap(next);
  }

  std::vector<std::string_view> views;
  views.reserve(pieces.size());
  size_t first = 0;
  for (const size_t length : pieces) {
    views.push_back(text.substr(starts[first], starts[first + length] - starts[first]));
    first += length;
  }
  return views;
}

}  // namespace kvrt::tokenizer
