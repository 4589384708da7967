// The reference course's demonstrations (the Rust crate `llm-from-scratch`, ch.
// 35–38), computed by the runtime. For the course's readers and kvrt's own
// checks; an embedder never needs this header.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "kvrt/error.h"

namespace kvrt {

// The ch38-cached-generation report (spec/kv-cache.md §6), 11 lines, byte for
// byte the chapter's: cached vs complete-prefix logits of the seed-38 model, work
// counters, the restored ch35 checkpoint's generation runs, reset evidence and
// rejected-call evidence, from the bytes of the ch35 checkpoint the chapter
// restores. A failed invariant of the demo is InvariantViolation, not a report.
Result<std::string> Ch38Report(std::span<const uint8_t> ch35_checkpoint);

}  // namespace kvrt
