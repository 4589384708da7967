#include "tokenizer/end_of_generation.h"

#include <algorithm>
#include <span>
#include <string_view>

namespace kvrt::tokenizer {
namespace {

using Texts = std::span<const std::string_view>;

// llama.cpp's texts for each role (src/llama-vocab.cpp), in its order.
constexpr std::string_view kEotTexts[] = {"<|eot_id|>", "<|im_end|>",  "<|end|>",
                             "<end_of_turn>", "<|endoftext|>", "<EOT>",
                             "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"};
constexpr std::string_view kEomTexts[] = {"<|eom_id|>"};
constexpr std::string_view kFimPreTexts[] = {"<|fim_prefix|>", "<fim-prefix>",
                                "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>", "<PRE>"};
constexpr std::string_view kFimSufTexts[] = {"<|fim_suffix|>", "<fim-suffix>",
                                "<\xEF\xBD\x9C" "fim\xE2\x96\x81hole\xEF\xBD\x9C>", "<SUF>"};
constexpr std::string_view kFimMidTexts[] = {"<|fim_middle|>", "<fim-middle>",
                                "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>", "<MID>"};
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<PAD>"};
constexpr std::string_view kFimRepTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>"};
constexpr std::string_view kFimSepTexts[] = {"<|file_sep|>"};
// The texts that end generation wherever they are in the vocabulary.
constexpr std::string_view kEndTexts[] = {"<|eot_id|>",    "<|im_end|>",    "<|end|>", "<end_of_turn>",
                             "<|endoftext|>", "<|eom_id|>", "<EOT>"};

// The role's id: the file's, else the first text the vocabulary spells, which
// then becomes a control token.
std::optional<uint32_t> FindByText(TokenTable& table, std::optional<uint32_t> named, Texts texts) {
  if (named) return named;
  for (const std::string_view text : texts) {
    if (const std::optional<uint32_t> id = table.Find(text)) {
      table.MarkControl(*id);
      return id;
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<uint32_t> DeriveEndOfGeneration(TokenTable& table, GenerationRoleIds named) {
  const std::optional<uint32_t> eot = FindByText(table, named.eot, kEotTexts);
  const std::optional<uint32_t> eom = FindByText(table, named.eom, kEomTexts);
  // FIM prefix, suffix and middle never end generation, but finding them changes
  // their type as in llama.cpp.
  FindByText(table, named.fim_pre, kFimPreTexts);
  FindByText(table, named.fim_suf, kFimSufTexts);
  FindByText(table, named.fim_mid, kFimMidTexts);
  std::vector<uint32_t> eog;
  for (const std::optional<uint32_t> id : {FindByText(table, named.fim_pad, kFimPadTexts),
                                           FindByText(table, named.fim_rep, kFimRepTexts),
                                           FindByText(table, named.fim_sep, kFimSepTexts)}) {
    if (id) eog.push_back(*id);
  }
  // llama.cpp visits every token; the index holds the last id of each text, and
  // an earlier token with the same text is not in its map either.
  for (const std::string_view text : kEndTexts) {
    if (const std::optional<uint32_t> id = table.Find(text)) {
      table.MarkControl(*id);
      eog.push_back(*id);
    }
  }
  for (const std::optional<uint32_t> id : {named.eos, eot, eom}) {
    if (id) eog.push_back(*id);
  }
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  return eog;
}

}  // namespace kvrt::tokenizer
