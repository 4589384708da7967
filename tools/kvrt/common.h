// Pieces every subcommand shares: error reporting, model loading and the engine
// flags.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "flags.h"
#include "kvrt/checkpoint.h"
#include "kvrt/engine_options.h"
#include "kvrt/error.h"
#include "kvrt/model.h"
#include "kvrt/threading/thread_pool.h"

namespace kvrt::cli {

inline constexpr int kErrorStatus = 2;

// Prints `error: <VariantName>: <message>` on stderr and returns kErrorStatus.
int ReportError(const Error& error);

struct LoadedModel {
  Checkpoint checkpoint;
  DecoderModel model;
};

// Reads a model file, LLMCP35 or llama2.c (decided by content), and builds its
// model. A llama2.c file brings no tokenizer: `checkpoint` then holds only the
// config and the file size.
Result<LoadedModel> LoadModel(const std::string& path);

// The engine flags of `logits` and `generate`.
inline constexpr FlagSpec kEngineFlags[] = {
    {"backend", true, "fast (default: Highway kernels, threads) or reference (scalar f64, bit-exact)"},
    {"precision", true, "f32 (default) or f64, for the fast backend"},
    {"threads", true, "worker threads of the fast backend (default: $KVRT_THREADS, else all cores)"},
};

// The engine a command runs on, and the thread pool it borrows.
struct EngineChoice {
  EngineOptions options;
  std::unique_ptr<threading::ThreadPool> pool;
};

Result<EngineChoice> EngineFromFlags(const Flags& flags);

}  // namespace kvrt::cli
