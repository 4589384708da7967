// Cutting special tokens out of a text before it is encoded (llama.cpp's
// tokenizer_st_partition).
//
// The special tokens are the control, user-defined and unknown ones. A
// user-defined token (an added token such as Qwen's "<think>") is cut out
// always, even when special-token text is otherwise read as plain text; control
// and unknown tokens ("<|eot_id|>", "<s>", "<unk>") only when the caller parses
// special tokens (llama.cpp's parse_special, off for untrusted text). The encoder
// sees only the text between them.
//
// The order is llama.cpp's: tokens longest text first (lowest id first among
// equal lengths), and each one splits every remaining raw fragment at all of its
// non-overlapping occurrences, left to right, before the next token is looked
// for. So with the tokens "bcd" and "ab", "abcd" is "a" + <bcd>, not <ab> + "cd".
//
// A token may strip the whitespace (C-locale isspace) on its left or right out
// of the neighbouring raw text (llama.cpp's lstrip/rstrip token attributes,
// which it sets by model name; see VocabularyTokenizer::Build).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocabulary.h"

namespace kvrt::tokenizer {

struct SpecialToken {
  uint32_t id = 0;
  bool user_defined = false;  // cut out even without special-token parsing
  bool lstrip = false;
  bool rstrip = false;
};

// A piece of the input after the split: raw text to encode, or a token id.
struct TextFragment {
  std::string_view text;  // raw text when !is_token
  uint32_t id = 0;
  bool is_token = false;
};

// The special tokens of `table` with non-empty text, in llama.cpp's matching
// order (longest text first, then lowest id).
std::vector<SpecialToken> SpecialTokensOf(const TokenTable& table);

// Splits `text` at the occurrences of the user-defined tokens, and of all
// others too when `parse_special`. Raw fragments are never empty. Throws only
// std::bad_alloc / std::length_error.
std::vector<TextFragment> SplitAtSpecialTokens(const TokenTable& table,
                                               const std::vector<SpecialToken>& tokens,
                                               std::string_view text, bool parse_special);

}  // namespace kvrt::tokenizer
