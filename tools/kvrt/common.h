// Pieces every subcommand shares: error reporting, model loading and the engine
// flags.
#pragma once

#include <optional>
#include <string>

#include "flags.h"
#include "kvrt/checkpoint.h"
#include "kvrt/engine_options.h"
#include "kvrt/error.h"
#include "kvrt/model.h"

namespace kvrt::cli {

inline constexpr int kErrorStatus = 2;

// Prints `error: <VariantName>: <message>` on stderr and returns kErrorStatus.
int ReportError(const Error& error);

struct LoadedModel {
  Checkpoint checkpoint;
  DecoderModel model;
};

// Reads an LLMCP35 checkpoint and builds its model.
Result<LoadedModel> LoadModel(const std::string& path);

// The engine flags of `logits` and `generate`.
inline constexpr FlagSpec kEngineFlags[] = {
    {"backend", true, "reference (scalar f64, bit-exact with the reference crate)"},
};

Result<EngineOptions> EngineOptionsFromFlags(const Flags& flags);

}  // namespace kvrt::cli
