// Cutting user-defined tokens (token type 4) out of a text before it is encoded.
//
// llama.cpp does this even when special-token text is parsed as plain text: a
// user-defined token (an added token such as phi-3's "<|assistant|>") is always
// its own id, and the encoder only sees the text between them. The order is
// llama.cpp's: tokens longest text first (lowest id first among equal lengths),
// and each one splits every remaining raw fragment at all of its non-overlapping
// occurrences, left to right, before the next token is looked for. So with the
// tokens "bcd" and "ab", "abcd" is "a" + <bcd>, not <ab> + "cd".
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

struct UserDefinedToken {
  uint32_t id = 0;
  bool lstrip = false;
  bool rstrip = false;
};

// A piece of the input after the split: raw text to encode, or a token id.
struct TextFragment {
  std::string_view text;  // raw text when !is_token
  uint32_t id = 0;
  bool is_token = false;
};

// The user-defined tokens of `table` with non-empty text, in llama.cpp's
// matching order (longest text first, then lowest id).
std::vector<UserDefinedToken> UserDefinedTokensOf(const TokenTable& table);

// Splits `text` at the tokens' occurrences. Raw fragments are never empty.
// Throws only std::bad_alloc / std::length_error.
std::vector<TextFragment> SplitAtUserDefinedTokens(const TokenTable& table,
                                                   const std::vector<UserDefinedToken>& tokens,
                                                   std::string_view text);

}  // namespace kvrt::tokenizer
