// Pieces every subcommand shares: error reporting, model loading and the engine
// flags.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "flags.h"
#include "kvrt/engine_options.h"
#include "kvrt/error.h"
#include "kvrt/load_model.h"
#include "kvrt/model.h"
#include "kvrt/threading/thread_pool.h"

namespace kvrt::cli {

inline constexpr int kErrorStatus = 2;
// bench-compare's verdict "slower than allowed", distinct from a usage or input
// error so that CI can tell a regression from a broken invocation.
inline constexpr int kRegressionStatus = 1;

// Prints `error: <VariantName>: <message>` on stderr and returns kErrorStatus.
int ReportError(const Error& error);
// Prints `error: PerformanceRegression: <what>` on stderr and returns kRegressionStatus.
int ReportRegression(const std::string& what);

// The values --weights takes, for its error message.
inline constexpr const char* kWeightFormatChoices =
    "as-stored, f32, bf16, f16, q8_0, q4_0, q5_0, q4_1, q5_1, iq4_nl, iq4_xs, q2_k, q3_k, q4_k, q5_k, q6_k, "
    "q3_k_m, q4_k_s, q4_k_m, q5_k_s or q5_k_m";

// The engine flags of `logits` and `generate`.
inline constexpr FlagSpec kEngineFlags[] = {
    {"backend", true, "fast (default: Highway kernels, threads) or reference (scalar f64, bit-exact)"},
    {"precision", true, "f32 (default) or f64, for the fast backend"},
    {"threads", true, "worker threads of the fast backend (default: $KVRT_THREADS, else all cores)", 't'},
    {"weights", true,
     "weight matrices as-stored (default: a GGUF's bf16/f16/q8_0/q4_0/q5_0/q4_1/q5_1/iq4_nl/iq4_xs/q2_k/q3_k/q4_k/"
     "q5_k/q6_k as stored, else f32), f32, bf16, f16, q8_0, q4_0, q5_0, q4_1, q5_1, iq4_nl, iq4_xs, q2_k, q3_k, q4_k, "
     "q5_k or q6_k (converted at load "
     "with ggml's reference quantizers; "
     "with --backend reference: the f64 oracle on the dequantized values), or llama-quantize's mix "
     "q3_k_m, q4_k_s, q4_k_m, q5_k_s or q5_k_m (each matrix the type llama.cpp gives it)"},
    {"max-rows-per-step", true,
     "most rows per sequence the fast engine forwards in one step, sizing its workspace (default 512); a "
     "longer prompt is prefilled in chunks and still committed once"},
    {"batch-variant", false,
     "fast backend: faster prefill attention whose logits may change with chunking and the step's other "
     "rows (never with --threads); default: batch-invariant"},
    {"kv-type", true,
     "K/V cache element type: f16 or bf16 (half the bytes a long-context decode step reads), q8_0 (llama.cpp's "
     "blocks of 32: 0.53 of f16's bytes); the reference backend rounds its f64 rows to the type, the fast path's "
     "oracle; or the engine's precision, f32 (default) or f64"},
    {"cache-type-k", true, "llama.cpp's spelling of --kv-type for the keys; K and V must have one type", 0,
     nullptr, false, "-ctk"},
    {"cache-type-v", true, "llama.cpp's spelling of --kv-type for the values", 0, nullptr, false, "-ctv"},
    {"int8-activations", false,
     "fast f32 backend: q8_0/q4_0 matrices multiply activations rounded to 8-bit q8_0 blocks, as llama.cpp "
     "does (AVX-512 VNNI or AVX2 byte pairs where the CPU has them): faster, LESS EXACT; default: f32 "
     "activations"},
    {"bf16-activations", false,
     "fast f32 backend: bf16 matrices multiply activations rounded to bf16, as llama.cpp does (AVX512_BF16's "
     "VDPBF16PS where the CPU has it): faster prefill, LESS EXACT; default: f32 activations"},
};

// The context size of `generate`, `batch`, `logits` and `chat`: the KV cache is
// allocated for this many positions, not for the model's whole context.
inline constexpr FlagSpec kContextFlags[] = {
    {"ctx-size", true, "tokens a sequence may hold, prompt included (default 0: the model's context)", 'c'},
};

// CapacityExceedsPositions when --ctx-size asks for more than the model's context
// (the check `generate` and `batch` make for their requests), before a cache is made.
Result<void> CheckContextSize(const Model& model, uint64_t context_size);

// The engine a command runs on, and the thread pool it borrows.
struct EngineChoice {
  EngineOptions options;
  std::unique_ptr<threading::ThreadPool> pool;
};

Result<EngineChoice> EngineFromFlags(const Flags& flags);

// The threads the engine computes on: its pool's, or 1 (the calling thread).
size_t EngineThreads(const EngineOptions& engine);

// "weights q8_0: q8_0 14, f16 1; fallbacks: <matrix> q8_0 -> f16 (...)": what the
// engine keeps `model`'s matrices in, for the engine's stderr line.
std::string DescribeEngineWeights(const Model& model, const EngineOptions& engine);

}  // namespace kvrt::cli
