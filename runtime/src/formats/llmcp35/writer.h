// The canonical LLMCP35 encoding of a checkpoint state (spec/checkpoint.md §4–§5,
// §12): descriptors, offsets, H, P and the checksum are all derived from the
// content, never taken from the stored file facts.
#pragma once

#include <cstdint>
#include <vector>

#include "formats/llmcp35/checkpoint.h"
#include "kvrt/error.h"

namespace kvrt::llmcp35 {

// The bytes plus the facts derived while laying them out (the reference's
// EncodedCheckpoint).
struct EncodedCheckpoint {
  std::vector<uint8_t> bytes;
  uint64_t header_bytes = 0;
  uint64_t payload_bytes = 0;
  uint64_t checksum = 0;
  std::vector<TensorDescriptor> descriptors;
};

// Validates the state (ValidateCheckpointState) and encodes it. Group lists and
// optimizer pairs are written in byte order of name whatever their order in
// memory, which is what makes the encoding canonical.
Result<EncodedCheckpoint> EncodeCanonical(const Checkpoint& checkpoint);

// The same encoding without ValidateCheckpointState, for a state that has just
// passed every loader check (the reader's canonical-form step); it skips
// rebuilding the model's RoPE table a second time.
Result<EncodedCheckpoint> EncodeValidated(const Checkpoint& checkpoint);

}  // namespace kvrt::llmcp35
