// The end-of-generation (EOG) set of a GGUF vocabulary: every id that ends a
// reply, as llama.cpp derives it when it loads the vocabulary.
//
// llama.cpp takes the end-of-turn (EOT), end-of-message (EOM) and fill-in-the-
// middle (FIM) ids from the file's keys, and finds those the file leaves out by
// the token's text ("<|eot_id|>", "<|im_end|>", "<|fim_pad|>", "<|repo_name|>",
// ...). The EOG set is then the FIM pad, repository and separator ids, every
// token spelled like one of its end texts ("<|eot_id|>", "<|im_end|>",
// "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>"), and EOS,
// EOT and EOM. Every token found by its text is made a control token if it was
// not one (llama.cpp overrides the type: such a token is then special-token text
// and decodes to nothing).
//
// One difference: where a vocabulary has several candidates for one role,
// llama.cpp takes whichever its hash map yields first; kvrt takes the first of
// llama.cpp's texts, in its list order, that the vocabulary spells. The EOG set
// does not depend on that choice unless the EOT candidates include DeepSeek's
// "<｜end▁of▁sentence｜>" beside one of the end texts.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tokenizer/vocabulary.h"

namespace kvrt::tokenizer {

// The roles a file may name by key (u32 ids; absent when the file does not).
struct GenerationRoleIds {
  std::optional<uint32_t> eos, eot, eom;
  std::optional<uint32_t> fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
};

// Finds the roles `named` lacks by text, marks the tokens found by text control
// in `table`, and returns the EOG set in increasing id order. Every id in
// `named` must be inside the table. Throws only std::bad_alloc.
std::vector<uint32_t> DeriveEndOfGeneration(TokenTable& table, GenerationRoleIds named);

}  // namespace kvrt::tokenizer
