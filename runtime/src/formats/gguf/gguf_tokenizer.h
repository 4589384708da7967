// The tokenizer a GGUF file carries in its tokenizer.ggml.* metadata, read into
// the VocabularyData that TokenizerFromVocabulary validates and builds.
#pragma once

#include <optional>

#include "formats/gguf/gguf_file.h"
#include "kvrt/error.h"
#include "kvrt/tokenizer.h"
#include "tokenizer/vocabulary.h"

namespace kvrt::gguf {

// nullopt when the file has no tokenizer.ggml.model key. Special ids stored as
// u32 −1 (llama.cpp's "none") are absent; where a SentencePiece file names none,
// llama.cpp's defaults apply (unk 0, bos 1, eos 2). Also the end-of-turn,
// end-of-message and FIM ids and tokenizer.chat_template when present.
// KeyTypeMismatch and MissingKey for malformed keys.
Result<std::optional<VocabularyData>> ReadVocabulary(const GgufFile& file);

// ReadVocabulary, then TokenizerFromVocabulary.
Result<std::optional<Tokenizer>> ReadTokenizer(const GgufFile& file);

}  // namespace kvrt::gguf
