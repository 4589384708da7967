// The complete-prefix forward pass on the scalar f64 twins: the oracle every fast
// path is checked against (spec/model.md §2, bit-exact with the reference crate).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kvrt/error.h"
#include "model/decoder_model.h"

namespace kvrt {

// Named intermediate activations of one forward pass, in the order they were
// computed (names and layouts as in fixtures/model/ch38_fixture_check.txt; head
// tensors are [B, heads, T, head_width]).
struct ForwardTrace {
  struct Stage {
    std::string name;
    std::vector<size_t> shape;
    std::vector<double> values;
  };
  std::vector<Stage> stages;
  const Stage* Find(std::string_view name) const;
};

// The input checks of a complete-prefix forward, in the order of spec/model.md
// §1.3 (TokenRank, EmptyBatch, EmptyTokens, ContextLengthExceeded,
// TokenCountMismatch, Embedding(TokenIdOutOfBounds)); any engine replaying a
// complete prefix reports its bad input with these.
Result<void> ValidateForwardInput(const ModelConfig& config, std::span<const uint32_t> token_ids,
                                  std::span<const size_t> shape);

// Logits of every position, [B, T, V] row-major, for `token_ids` of shape `shape`
// ([B, T]). Validation order of spec/model.md §1.3: TokenRank, EmptyBatch,
// EmptyTokens, ContextLengthExceeded, TokenCountMismatch, then
// Embedding(TokenIdOutOfBounds) at the first bad flat position.
Result<std::vector<double>> ForwardCompletePrefix(const DecoderModel& model,
                                                  std::span<const uint32_t> token_ids,
                                                  std::span<const size_t> shape,
                                                  ForwardTrace* trace = nullptr);

// Batch 1: the last position's V logits of the complete prefix `tokens`.
Result<std::vector<double>> LastLogitsCompletePrefix(const DecoderModel& model,
                                                     std::span<const uint32_t> tokens);

}  // namespace kvrt
