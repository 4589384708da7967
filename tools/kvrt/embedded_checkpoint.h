// The ch35 checkpoint the ch38 report restores (fixtures/checkpoints/
// ch38_loaded.ckpt), embedded in the binary at build time (cmake/EmbedBytes.cmake)
// so that `kvrt report` runs from anywhere.
#pragma once

#include <cstdint>
#include <span>

namespace kvrt::cli {

std::span<const uint8_t> EmbeddedCh35Checkpoint();

}  // namespace kvrt::cli
