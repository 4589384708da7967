// Test access to the vocabularies of the GGUF fixtures, and the llama.cpp test
// cases that come with them (.inp / .out, tiny.tokenize.json).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvrt/tokenizer.h"
#include "tokenizer/vocabulary.h"

namespace kvrt::testing {

// The tokenizer.ggml.* metadata of the GGUF file at `gguf_path`, read by the
// runtime's GGUF reader; nullopt when the file cannot be read.
std::optional<VocabularyData> LoadVocabularyForTest(const std::string& gguf_path);

// The tokenizer of `gguf_path`, built on first use and kept for the process;
// nullptr when the file cannot be read or its vocabulary is rejected.
const Tokenizer* SharedTokenizer(const std::string& gguf_path);

// One llama.cpp tokenizer test: the text and the ids the Hugging Face tokenizer
// gave it (no BOS/EOS).
struct TokenizationCase {
  std::string text;
  std::vector<uint32_t> ids;
};

// The cases of `<gguf_path>.inp` / `.out` (fixture README §5): texts separated by
// "\n__ggml_vocab_test__\n" (after every text, the last included), one line of
// " id id ..." per text.
std::vector<TokenizationCase> ReadTokenizationCases(const std::string& gguf_path);

}  // namespace kvrt::testing
