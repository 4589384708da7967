// Whole-state checks of a Checkpoint: the reference's cross-component checks
// (spec/checkpoint.md §9 step 13) and, for the writer, the full validation a
// state must pass before it may be encoded.
#pragma once

#include <span>

#include "formats/llmcp35/checkpoint.h"
#include "kvrt/error.h"
#include "model/decoder_model.h"

namespace kvrt::llmcp35 {

// Checkpoint::validate_parts: tokenizer vocabulary against V, selected step
// against the AdamW step, and for t > 0 the moment names and shapes against the
// model parameters (both compared in byte order of name).
Result<void> ValidateCrossComponents(const Checkpoint& checkpoint);

// Everything the loader would check, on an in-memory state: tensor sizes against
// shapes, the tokenizer, the model (ValidateModelTensors), AdamW config, groups,
// moments and state, then the cross-component checks. A state that passes
// encodes to a file ParseCheckpoint accepts.
Result<void> ValidateCheckpointState(const Checkpoint& checkpoint);

}  // namespace kvrt::llmcp35
