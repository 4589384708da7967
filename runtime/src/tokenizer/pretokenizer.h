// The pre-tokenizers of GGUF "gpt2" vocabularies: they cut text into the pieces
// byte-level BPE merges within (words, number runs, punctuation runs,
// whitespace), chosen by tokenizer.ggml.pre as llama.cpp chooses them.
//
// A pre-tokenizer is llama.cpp's list of regexes for that name, applied in turn:
// each one splits every piece the previous ones made into its matches and the
// gaps between them. llama.cpp runs these regexes over a copy of the text with
// one byte per code point, in which a non-ASCII code point becomes a byte for
// its class (letter, number, punctuation, whitespace, other: codepoint_class.h)
// and \p{L}, \p{N}, \p{P} become classes of those bytes plus their ASCII members
// (for "gpt-2" and "llama-bpe" it runs hand-written equivalents of the same
// regexes). kvrt does exactly that, with PCRE2 over the collapsed bytes, so the
// pieces are llama.cpp's for every input.
//
// The families, by the regexes they run:
//   default (also a missing name): punctuation runs, GPT-2's regex, number runs,
//       then runs of three ASCII digits
//   gpt-2, phi-2, mpt, olmo, jais, gigachat, jina-es, jina-de, jina-v1-en,
//       roberta-bpe: GPT-2's regex
//       's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
//   llama3, llama-v3, llama-bpe, falcon3, dbrx, smaug-bpe: Llama 3's regex
//       (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+
//       |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   qwen2, deepseek-r1-qwen, stablelm2, megrez: Llama 3's regex with \p{N} (one
//       digit per piece) for \p{N}{1,3}
//   smollm, starcoder, refact, command-r, codeshell, exaone, minerva-7b: every
//       digit alone, then GPT-2's regex
// The first four Llama 3 names also set llama.cpp's ignore_merges (a piece that
// is itself a token is that token) and add BOS when the file does not say.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kvrt/error.h"

namespace kvrt::tokenizer {

class PreTokenizer {
 public:
  // UnsupportedPreTokenizer{pre} for a name outside the families above; its
  // message lists the supported names.
  static Result<PreTokenizer> ForName(std::string_view pre);
  // The supported names, comma-separated, for messages.
  static std::string SupportedNames();

  // Whether a piece spelled exactly like a token skips merging (ignore_merges).
  bool ignores_merges() const { return ignores_merges_; }
  // Whether llama.cpp adds BOS for this name when tokenizer.ggml.add_bos_token
  // is absent.
  bool adds_bos() const { return adds_bos_; }

  // The pieces of `text`, in order, covering every byte exactly once. `text`
  // must be what RepairUtf8 (tokenizer/lenient_utf8.h) leaves: every character
  // readable. Fails only when PCRE2 does. Safe to call concurrently.
  Result<std::vector<std::string_view>> Split(std::string_view text) const;

 private:
  struct Stages;  // the compiled regexes, shared by copies
  PreTokenizer(std::shared_ptr<const Stages> stages, bool ignores_merges, bool adds_bos)
      : stages_(std::move(stages)), ignores_merges_(ignores_merges), adds_bos_(adds_bos) {}

  std::shared_ptr<const Stages> stages_;
  bool ignores_merges_ = false;
  bool adds_bos_ = false;
};

}  // namespace kvrt::tokenizer
