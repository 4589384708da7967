// Which arithmetic a session runs: the exact reference or the fast engine.
#pragma once

#include <cstddef>
#include <string_view>

#include "kvrt/error.h"
#include "kvrt/weight_format.h"

namespace kvrt {

struct ModelConfig;

namespace threading {
class ThreadPool;
}

// Element type of the K/V cache and of the engine's arithmetic.
enum class Precision {
  kF64,
  kF32,
};

enum class Backend {
  // Scalar f64 twins in the reference order: bit-exact with the reference crate.
  kReference,
  // Highway kernels and kvrt's thread pool, f32 or f64, checked against the reference
  // with explicit tolerances.
  kFast,
};

// Element type of the K/V cache's rows (llama.cpp's --cache-type-k/-v). A decode
// step reads every cached row of every layer, so past a few thousand positions the
// cache's bytes outweigh the weights'.
//   kEngine: the engine's own precision (f32, or f64 on an f64 engine): exact.
//   kF16:    IEEE half precision, half the bytes of f32. A step's new rows are
//            rounded (to nearest, ties to even) before any attention reads them, so
//            a row has the same bits whether it was committed earlier or is one of
//            the step's own: batch == solo and chunked == whole prefill stay
//            bit-identical. The fast f32 engine stores the f16 bits and its
//            attention reads them directly; the reference engine keeps f64 storage
//            holding its rows rounded to f16, the oracle of the fast f16 path.
//            A value beyond f16's range (|x| ≥ 65520) rounds to infinity and fails
//            the step as a non-finite candidate row.
//   kBf16:   bfloat16 (f32's range, 8 significant bits), the same half of the bytes
//            and every promise of kF16; coarser (relative step 2^−8 against f16's
//            2^−11) but it never overflows where f32 does not.
//   kQ8_0:   llama.cpp's q8_0: blocks of 32 along the head dimension (the last one
//            of a head not a multiple of 32 zero-padded), each an f16 scale d and 32
//            int8 quants, a value quant·d; 34 bytes a block, 0.53 of f16's. Rows are
//            quantized as ggml's quantize_row_q8_0_ref does (d = amax/127, the quants
//            from the unrounded d), once, before attention reads them, with every
//            promise of kF16; the reference engine quantizes its f64 rows by the same
//            formula in f64. A block whose scale overflows f16 (amax ≥ 127·65520)
//            fails the step as a non-finite candidate row.
enum class KvType {
  kEngine,
  kF16,
  kBf16,
  kQ8_0,
};

// kF16 or kBf16: a 16-bit cache.
inline bool IsHalfWidthKvType(KvType type) { return type == KvType::kF16 || type == KvType::kBf16; }
// kF16, kBf16 or kQ8_0: a cache the fast f32 engine stores compact (and the
// reference engine rounds as that stores it).
inline bool IsCompactKvType(KvType type) { return IsHalfWidthKvType(type) || type == KvType::kQ8_0; }

std::string_view PrecisionName(Precision precision);  // "f64", "f32"
std::string_view BackendName(Backend backend);        // "reference", "fast"
std::string_view KvTypeName(KvType type);             // "engine", "f16", "bf16", "q8_0"
// Bytes one cached K or V row of head_width takes in a cache of this precision and
// type (a q8_0 row: whole blocks of 32 quants and their f16 scales).
size_t KvRowBytes(Precision precision, KvType type, size_t head_width);
// Bytes one position takes in such a cache of this model: its K and V rows in
// every layer and key/value head (what a decode step reads a position).
size_t KvBytesPerPosition(const ModelConfig& config, Precision precision, KvType type);

// The default is the fast f32 engine on every core, as in the C API
// (kvrt_engine_options_default); the bit-exact reference engine is an explicit
// choice (ReferenceEngine()).
struct EngineOptions {
  Backend backend = Backend::kFast;
  Precision precision = Precision::kF32;  // the reference backend is always f64
  // Threads of the fast engine when no pool is given: 0 = $KVRT_THREADS when set,
  // else every core; 1 = the calling thread only. A session (or a generation)
  // then runs on a pool of its own, started when it opens.
  size_t threads = 0;
  // A pool to share between sessions instead (threads is then not used). It must
  // outlive every session that uses it.
  threading::ThreadPool* pool = nullptr;
  // Most rows the fast engine forwards in one step, over all slots (never fewer
  // than the cache's slots); its workspace is sized by this, not by the cache's
  // capacity. A longer prompt is prefilled in chunks and still committed once.
  // At least 1.
  size_t max_rows_per_step = kDefaultMaxRowsPerStep;
  static constexpr size_t kDefaultMaxRowsPerStep = 512;
  // The format the weight matrices are kept in (kvrt/weight_format.h). The fast
  // f32 engine computes on the compressed matrices; fast f64 on their dequantized
  // values in f64 panels (no bandwidth gain: a check of the same weights in f64);
  // the reference engine on DequantizedModel(model, weights), the oracle of the
  // compressed kernels (kAsStored: the model's own exact values, bit-exact with
  // the specification).
  WeightFormat weights = WeightFormat::kAsStored;
  // true (the default): batch-invariant. A sequence's logits are the same bits
  // alone or beside other sequences in a step, in any slot, with any thread
  // count, and whether its prompt is prefilled in one step, in chunks of any size
  // or token by token.
  // false (opt-in, faster prefill): the fast engine attends all new rows of a
  // prefill run together (simd/query_tile_attention.h) and a decode row alone, so
  // results may change with the step's shape — chunk sizes, and which rows of
  // other slots share the step — but NEVER with the thread count, and they stay
  // within the fast engine's derived tolerance of the reference. The reference
  // engine ignores it (it is always exact).
  bool batch_invariant = true;
  // false (the default): activations stay f32 in every matrix product.
  // true (opt-in, LESS EXACT, fast f32 engine only): the q8_0, q4_0, q5_0, q4_1, q5_1,
  // iq4_nl, iq4_xs, q2_k, q3_k, q4_k, q5_k and q6_k matrices (ReachedByInt8Activations)
  // multiply activation rows rounded to 8 bits, in ggml's q8_0 blocks, as llama.cpp does
  // for q8_0/q4_0/q5_0/iq4_nl weights (q4_1/q5_1: q8_1 blocks, the same quants) (for the K-quants and iq4_xs it rounds to q8_K
  // super-blocks, whose steps are no finer; simd/int8_activations.h): exact integer sums
  // (AVX-512 VNNI where the CPU has it, VPMADDUBSW byte pairs on AVX2), faster
  // decode and prefill on those weights. The rounding errs by up to half a step of
  // each block of 32 activations (amax/254), so the logits move by far more than the
  // f32 kernels' rounding (docs/int8_activations.md gives the measured distance). Other
  // formats are unaffected. Still deterministic: the same bits for any thread count,
  // and batch-invariant (every row is rounded alone).
  bool int8_activations = false;
  // false (the default): bf16 matrices multiply the f32 activations exactly.
  // true (opt-in, LESS EXACT, fast f32 engine only): bf16 matrices (with an even
  // number of rows) multiply activation rows rounded to bf16, on the CPU's bf16 dot
  // unit (AVX512_BF16's VDPBF16PS; simd/bf16_activations.h), as llama.cpp does for
  // bf16 weights: twice the products per instruction of the f32 FMA, so a faster
  // prefill on bf16 weights. Rounding an activation to bf16 errs by up to 2^-9 of it,
  // so the logits move by more than the f32 kernels' rounding
  // (docs/bf16_activations.md gives the measured distance). Other formats are
  // unaffected. Still deterministic: the same bits for any thread count, and
  // batch-invariant (every row is rounded alone, every column summed in one order).
  bool bf16_activations = false;
  // The K/V cache's element type (see KvType). Sessions opened from these options
  // create their cache with it (CacheOptions::kv_type); a cache bound to an engine
  // must have the engine's.
  KvType kv_type = KvType::kEngine;

  // UnsupportedBackend for a backend, precision, weight format or KV type outside
  // the enums, a reference engine asked for anything but f64, int8 activations
  // outside the fast f32 engine, an f16 or bf16 KV cache on the fast f64 engine or
  // with batch-variant attention; InvalidArgument for max_rows_per_step 0 or more
  // than kMaxThreads threads.
  static constexpr size_t kMaxThreads = 1024;
  Result<void> Validate() const;
};

// The scalar f64 engine of the specification (bit-exact with the reference).
inline EngineOptions ReferenceEngine() { return {Backend::kReference, Precision::kF64, 1, nullptr}; }

}  // namespace kvrt
