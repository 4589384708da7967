// The regex pre-tokenizer of GGUF "gpt2" vocabularies: it cuts text into the
// pieces byte-level BPE merges within (words, number runs, punctuation runs,
// whitespace), chosen by tokenizer.ggml.pre.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "kvrt/error.h"

namespace kvrt::tokenizer {

class PreTokenizer {
 public:
  // "default", "gpt-2" and "" (the key absent) all select GPT-2's pattern
  //   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
  // compiled with PCRE2 in UTF + UCP mode (JIT when available). Any other name
  // fails with UnsupportedPreTokenizer{pre}.
  static Result<PreTokenizer> ForName(std::string_view pre);

  // The pieces of `text`, in order, covering every byte exactly once. Text no
  // match covers (a lone non-space whitespace character before a non-space, which
  // GPT-2's trailing `|\s+` alternative would take; bytes that are not UTF-8) is a
  // piece of its own, as in llama.cpp's splitter. Safe to call concurrently.
  Result<std::vector<std::string_view>> Split(std::string_view text) const;

 private:
  struct Code;  // the compiled pattern (pcre2_code), freed with the pre-tokenizer
  explicit PreTokenizer(std::shared_ptr<const Code> code) : code_(std::move(code)) {}
  std::shared_ptr<const Code> code_;
};

}  // namespace kvrt::tokenizer
