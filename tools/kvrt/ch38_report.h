// The ch38-cached-generation report, computed by the runtime.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "kvrt/error.h"

namespace kvrt::cli {

// The report text (11 lines), given the bytes of the ch35 checkpoint that the
// chapter restores (fixtures/checkpoints/ch38_loaded.ckpt).
Result<std::string> BuildCh38Report(std::span<const uint8_t> ch35_checkpoint);

// That checkpoint, embedded in the binary at build time so `kvrt report` runs from
// anywhere.
std::span<const uint8_t> EmbeddedCh35Checkpoint();

}  // namespace kvrt::cli
