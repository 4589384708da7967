#include "formats/gguf/gguf_tokenizer.h"
#include "tokenizer/tokenizer_impl.h"

#include <new>
#include <string>
#include <utility>

namespace kvrt::gguf {
namespace {

constexpr uint32_t kNoToken = 0xFFFFFFFFu;  // llama.cpp writes u32 −1 for "none"

// An optional special-token id: absent key → `fallback`; −1 → none.
Result<std::optional<uint32_t>> SpecialId(const GgufFile& file, std::string_view key,
                                          std::optional<uint32_t> fallback) {
  Result<std::optional<uint32_t>> id = file.GetOptional<uint32_t>(key);
  if (!id) return Fail(std::move(id.error()));
  if (!*id) return fallback;
  if (**id == kNoToken) return std::optional<uint32_t>();
  return *id;
}

Result<std::optional<bool>> OptionalFlag(const GgufFile& file, std::string_view key) {
  return file.GetOptional<bool>(key);
}

}  // namespace

Result<std::optional<VocabularyData>> ReadVocabulary(const GgufFile& file) try {
  Result<std::optional<std::string_view>> model = file.GetOptional<std::string_view>("tokenizer.ggml.model");
  if (!model) return Fail(std::move(model.error()));
  if (!*model) return std::optional<VocabularyData>();
  VocabularyData data;
  data.model = std::string(**model);
  Result<std::optional<std::string_view>> pre = file.GetOptional<std::string_view>("tokenizer.ggml.pre");
  if (!pre) return Fail(std::move(pre.error()));
  if (*pre) data.pre = std::string(**pre);
  // Only a hint for token attributes: a name of another type is ignored.
  if (Result<std::optional<std::string_view>> name =
          file.GetOptional<std::string_view>("general.name");
      name && *name) {
    data.name = std::string(**name);
  }

  Result<std::span<const std::string_view>> tokens = file.GetStringArray("tokenizer.ggml.tokens");
  if (!tokens) return Fail(std::move(tokens.error()));
  data.tokens.assign(tokens->begin(), tokens->end());
  if (file.Find("tokenizer.ggml.scores") != nullptr) {
    Result<ScalarArrayView<float>> scores = file.GetArray<float>("tokenizer.ggml.scores");
    if (!scores) return Fail(std::move(scores.error()));
    data.scores.resize(scores->size());
    for (size_t i = 0; i < scores->size(); ++i) data.scores[i] = (*scores)[i];
  }
  if (file.Find("tokenizer.ggml.token_type") != nullptr) {
    Result<ScalarArrayView<int32_t>> types = file.GetArray<int32_t>("tokenizer.ggml.token_type");
    if (!types) return Fail(std::move(types.error()));
    data.token_types.resize(types->size());
    for (size_t i = 0; i < types->size(); ++i) data.token_types[i] = (*types)[i];
  }
  if (file.Find("tokenizer.ggml.merges") != nullptr) {
    Result<std::span<const std::string_view>> merges = file.GetStringArray("tokenizer.ggml.merges");
    if (!merges) return Fail(std::move(merges.error()));
    data.merges.assign(merges->begin(), merges->end());
  }

  // llama.cpp's defaults for the ids a vocabulary does not name: <s> 1, </s> 2
  // and <unk> 0 for SentencePiece; 11 as both BOS and EOS for byte-level BPE
  // (GPT-2's "<|endoftext|>" is elsewhere, but these are the ids llama.cpp
  // assumes). A default outside the vocabulary is absent.
  const bool spm = data.model == "llama", bpe = data.model == "gpt2";
  struct Special {
    const char* key;
    std::optional<uint32_t>* out;
    std::optional<uint32_t> spm_default;
    std::optional<uint32_t> bpe_default;
  };
  const Special specials[] = {
      {"tokenizer.ggml.bos_token_id", &data.bos, 1, 11},
      {"tokenizer.ggml.eos_token_id", &data.eos, 2, 11},
      {"tokenizer.ggml.unknown_token_id", &data.unk, 0, std::nullopt},
      {"tokenizer.ggml.padding_token_id", &data.pad, std::nullopt, std::nullopt},
      {"tokenizer.ggml.eot_token_id", &data.eot, std::nullopt, std::nullopt},
      {"tokenizer.ggml.eom_token_id", &data.eom, std::nullopt, std::nullopt},
      {"tokenizer.ggml.fim_pre_token_id", &data.fim_pre, std::nullopt, std::nullopt},
      {"tokenizer.ggml.fim_suf_token_id", &data.fim_suf, std::nullopt, std::nullopt},
      {"tokenizer.ggml.fim_mid_token_id", &data.fim_mid, std::nullopt, std::nullopt},
      {"tokenizer.ggml.fim_pad_token_id", &data.fim_pad, std::nullopt, std::nullopt},
      {"tokenizer.ggml.fim_rep_token_id", &data.fim_rep, std::nullopt, std::nullopt},
      {"tokenizer.ggml.fim_sep_token_id", &data.fim_sep, std::nullopt, std::nullopt},
  };
  for (const Special& special : specials) {
    std::optional<uint32_t> fallback =
        spm ? special.spm_default : (bpe ? special.bpe_default : std::nullopt);
    if (fallback && *fallback >= data.tokens.size()) fallback.reset();
    Result<std::optional<uint32_t>> id = SpecialId(file, special.key, fallback);
    if (!id) return Fail(std::move(id.error()));
    *special.out = *id;
  }
  // The FIM keys' older names, which llama.cpp still reads (after the new ones).
  const Special deprecated[] = {
      {"tokenizer.ggml.prefix_token_id", &data.fim_pre, std::nullopt, std::nullopt},
      {"tokenizer.ggml.suffix_token_id", &data.fim_suf, std::nullopt, std::nullopt},
      {"tokenizer.ggml.middle_token_id", &data.fim_mid, std::nullopt, std::nullopt},
  };
  for (const Special& special : deprecated) {
    if (file.Find(special.key) == nullptr) continue;
    Result<std::optional<uint32_t>> id = SpecialId(file, special.key, std::nullopt);
    if (!id) return Fail(std::move(id.error()));
    *special.out = *id;
  }
  Result<std::optional<std::string_view>> chat_template =
      file.GetOptional<std::string_view>("tokenizer.chat_template");
  if (!chat_template) return Fail(std::move(chat_template.error()));
  if (*chat_template) data.chat_template = std::string(**chat_template);
  struct Flag {
    const char* key;
    std::optional<bool>* out;
  };
  const Flag flags[] = {{"tokenizer.ggml.add_bos_token", &data.add_bos},
                        {"tokenizer.ggml.add_eos_token", &data.add_eos},
                        {"tokenizer.ggml.add_space_prefix", &data.add_space_prefix}};
  for (const Flag& flag : flags) {
    Result<std::optional<bool>> value = OptionalFlag(file, flag.key);
    if (!value) return Fail(std::move(value.error()));
    *flag.out = *value;
  }
  return std::optional<VocabularyData>(std::move(data));
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the vocabulary of " + file.path());
}

Result<std::optional<Tokenizer>> ReadTokenizer(const GgufFile& file) {
  Result<std::optional<VocabularyData>> data = ReadVocabulary(file);
  if (!data) return Fail(std::move(data.error()));
  if (!*data) return std::optional<Tokenizer>();
  Result<Tokenizer> tokenizer = TokenizerFromVocabulary(std::move(**data));
  if (!tokenizer) return Fail(std::move(tokenizer.error()));
  return std::optional<Tokenizer>(std::move(*tokenizer));
}

}  // namespace kvrt::gguf
