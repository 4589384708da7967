// What a Tokenizer handle holds (kvrt/tokenizer.h), and the factory of the GGUF
// kinds, whose input is the library's own VocabularyData.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kvrt/tokenizer.h"
#include "tokenizer/vocabulary.h"

namespace kvrt {

namespace tokenizer {
class VocabularyTokenizer;
}

struct Tokenizer::Impl {
  TokenizerKind kind = TokenizerKind::kLiteral;
  std::vector<std::string> pieces;                  // literal and llama2.c
  std::vector<std::pair<uint32_t, uint32_t>> merges;  // byte-BPE, training space
  std::vector<std::string> expansions;  // byte-BPE: bytes of training id 0..256+n
  std::vector<float> scores;            // llama2.c: merge score of every piece
  uint32_t max_token_length = 0;        // llama2.c
  std::vector<uint32_t> sorted_ids;     // llama2.c: ids by piece bytes, for lookups
  std::shared_ptr<const tokenizer::VocabularyTokenizer> vocabulary;  // GGUF kinds only
};

// A GGUF vocabulary: "llama" gives kSentencePiece, "gpt2" kGpt2Bpe
// (UnsupportedTokenizerModel otherwise). The checks and defaults are those of
// tokenizer::VocabularyTokenizer::Build (tokenizer/vocabulary_tokenizer.h).
Result<Tokenizer> TokenizerFromVocabulary(VocabularyData vocabulary);

}  // namespace kvrt
