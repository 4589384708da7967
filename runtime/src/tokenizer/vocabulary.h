// The vocabularies GGUF files carry (the tokenizer.ggml.* metadata), as plain data,
// and the validated token table both GGUF tokenizers build from them.
//
// A GGUF reader fills VocabularyData; Tokenizer::FromVocabulary validates it and
// picks the algorithm by `model`: "llama" = SentencePiece (tokenizer/sentencepiece.h),
// "gpt2" = byte-level BPE (tokenizer/byte_level_bpe.h). Behaviour follows llama.cpp's
// tokenize with add_special = false, and parse_special as the caller asks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kvrt/error.h"

namespace kvrt {

struct VocabularyData {             // what a GGUF's tokenizer.ggml.* metadata holds
  std::string model;                // "llama" (SentencePiece) or "gpt2" (byte-level BPE)
  std::string pre;                  // tokenizer.ggml.pre ("" when absent)
  std::string name;                 // general.name ("" when absent): llama.cpp keys
                                    // some token attributes on it (phi-3's rstrip)
  std::vector<std::string> tokens;  // token id i = tokens[i]
  std::vector<float> scores;        // may be empty (gpt2)
  std::vector<int32_t>
      token_types;  // may be empty; 1 normal,2 unknown,3 control,4 user-defined,5 unused,6 byte
  std::vector<std::string> merges;             // gpt2: "left right" strings in rank order
  std::optional<uint32_t> bos, eos, unk, pad;  // u32 -1 in the file means absent
  // End of turn and of message, and the fill-in-the-middle roles (prefix, suffix,
  // middle, pad, repository, file separator); found by text when absent.
  std::optional<uint32_t> eot, eom, fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
  std::optional<bool> add_bos, add_eos, add_space_prefix;
  std::optional<std::string> chat_template;  // tokenizer.chat_template
};

namespace tokenizer {

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type). An empty list
// means every token is normal; 0 ("undefined") decodes to nothing, like llama.cpp.
enum class TokenType : uint8_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// Token texts with their types and a text -> id index, after the checks every GGUF
// vocabulary must pass: a non-empty list of at most INT32_MAX tokens, scores and
// types either absent or one per token, scores finite, types 0..6. A text spelled
// by several tokens maps to the last of them (llama.cpp builds its index the same
// way).
class TokenTable {
 public:
  static Result<TokenTable> Build(std::vector<std::string> tokens, std::vector<float> scores,
                                  const std::vector<int32_t>& token_types);
  // Move-only: index_ views the strings texts_ owns, which a vector move keeps in
  // place but a copy would not.
  TokenTable(TokenTable&&) = default;
  TokenTable& operator=(TokenTable&&) = default;
  TokenTable(const TokenTable&) = delete;
  TokenTable& operator=(const TokenTable&) = delete;

  size_t size() const { return texts_.size(); }
  const std::string& text(uint32_t id) const { return texts_[id]; }
  TokenType type(uint32_t id) const { return types_[id]; }
  float score(uint32_t id) const { return scores_.empty() ? 0.0f : scores_[id]; }
  std::optional<uint32_t> Find(std::string_view text) const;

  // llama.cpp makes some tokens control tokens by their text, whatever the file
  // says (tokenizer/end_of_generation.h); only while a tokenizer is being built.
  void MarkControl(uint32_t id) { types_[id] = TokenType::kControl; }

 private:
  TokenTable() = default;

  std::vector<std::string> texts_;
  std::vector<TokenType> types_;
  std::vector<float> scores_;  // empty when the file has none (every score 0)
  std::unordered_map<std::string_view, uint32_t> index_;
};

}  // namespace tokenizer
}  // namespace kvrt
