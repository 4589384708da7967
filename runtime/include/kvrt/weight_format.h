// The number format the fast engine keeps a model's weight matrices in.
//
// Decode reads every weight once per token, so fewer bytes per weight is faster
// decode: f32 costs 4 bytes, bf16 and f16 2, q8_0 1.0625, q5_1 0.75, q5_0 0.6875,
// q4_1 0.625 and q4_0 and iq4_nl 0.5625 (ggml's block formats: 32 weights along the
// input dimension K share one f16 scale, q4_1 and q5_1 also an f16 minimum; iq4_nl's
// 4-bit index picks one of 16 non-linearly spaced values), q6_k 0.82, q5_k 0.70, q4_k
// 0.58, q3_k 0.57, iq4_xs 0.57 and q2_k 0.33 (ggml's K-quants and iq4_xs: 256 weights
// along K share an f16 scale, and 16 or 32 of them an 8-, 6- or 4-bit sub-scale; q2_k,
// q4_k and q5_k also a minimum; q3_k's 3-bit quants are kept in 4 bits, so it is barely
// smaller than q4_k here, while q2_k keeps ggml's 2.625 bits a weight:
// simd/compressed_matrix.h).
//
// kAsStored keeps what the file holds: a GGUF tensor already in bf16, f16, q8_0,
// q4_0, q5_0, q4_1, q5_1, iq4_nl, iq4_xs, q2_k, q3_k, q4_k, q5_k or q6_k is used as stored (repacked
// losslessly), everything else is f32. An explicit format converts every matrix (the seven per block, the token
// table and the vocabulary head) from its f32-rounded values when the weights are
// packed, with ggml's reference quantizers (no importance matrix). Gains and RoPE
// tables stay in the engine's precision.
//
// A q8_0, q4_0, q5_0, q4_1, q5_1 or iq4_nl matrix needs K % 32 == 0, a q2_k, q3_k,
// q4_k, q5_k, q6_k or iq4_xs one K % 256 == 0. A matrix that does not fit falls back as
// llama.cpp's quantizer does (llama_tensor_get_type): q6_k to q8_0, q4_k to q5_0, q5_k
// to q5_1, q2_k, q3_k and iq4_xs to iq4_nl, and anything whose block does not divide K
// to f16, where llama.cpp's chain ends (for q8_0/q4_0/q5_0/q4_1/q5_1/iq4_nl themselves
// llama.cpp refuses the tensor instead). Fallbacks are never errors: Model::WeightPlan
// lists them, and the CLI reports them.
//
// The mixes q3_k_m, q4_k_s, q4_k_m, q5_k_s and q5_k_m are llama-quantize's Q3_K_M,
// Q4_K_S ... Q5_K_M:
// each matrix gets the type llama.cpp b4747 gives it (llama_tensor_get_type: more bits
// for the vocabulary head and for some layers' value and down projections, its
// fallbacks for a K that no K-quant block divides), quantized as llama-quantize does
// without an importance matrix, so a mix converts a model to the bytes of the file
// llama-quantize would write (every type these mixes choose is a format here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvrt {

// Stable values (the C API's KVRT_WEIGHTS_* mirror them).
enum class WeightFormat : uint8_t {
  kAsStored = 0,
  kF32 = 1,
  kBf16 = 2,
  kF16 = 3,
  kQ8_0 = 4,
  kQ4_0 = 5,
  kQ4_K = 6,
  kQ6_K = 7,
  kQ5_K = 8,
  // llama-quantize's mixes (above): a choice per matrix, never a matrix's format.
  kQ4_K_S = 9,
  kQ4_K_M = 10,
  kQ5_K_S = 11,
  kQ5_K_M = 12,
  kQ5_0 = 13,
  kQ3_K = 14,
  kQ3_K_M = 15,  // a mix, as 9..12
  kIQ4_NL = 16,
  kIQ4_XS = 17,
  kQ4_1 = 18,
  kQ5_1 = 19,
  kQ2_K = 20,  // llama-quantize --pure's Q2_K (its Q2_K mix is not offered)
};

// "as-stored", "f32", "bf16", "f16", "q8_0", "q4_0", "q4_k", "q6_k", "q5_k", "q4_k_s",
// "q4_k_m", "q5_k_s", "q5_k_m", "q5_0", "q3_k", "q3_k_m", "iq4_nl", "iq4_xs", "q4_1",
// "q5_1", "q2_k" ("unknown" outside the enum).
std::string_view WeightFormatName(WeightFormat format);
// The inverse of WeightFormatName for its names; nullopt for anything else.
std::optional<WeightFormat> ParseWeightFormat(std::string_view name);
// Within the enum.
bool IsKnownWeightFormat(WeightFormat format);
// One of llama-quantize's mixes (q3_k_m, q4_k_s ... q5_k_m).
bool IsWeightMix(WeightFormat format);
// Bytes per weight of a matrix kept in `format` (kAsStored and the mixes: nan, it
// depends).
double WeightFormatBytesPerWeight(WeightFormat format);
// What K must be a multiple of for a matrix to be kept in `format`: 32 for q8_0,
// q4_0, q5_0, q4_1, q5_1 and iq4_nl, 256 for q2_k, q3_k, q4_k, q5_k, q6_k and iq4_xs, 1 for the rest.
size_t WeightFormatRowMultiple(WeightFormat format);

// The format one matrix of a model is kept in for a requested format.
struct MatrixWeightFormat {
  size_t parameter = 0;     // index in the model's tensors (spec/model.md §9 order)
  std::string name;         // the parameter's name
  size_t rows = 0;          // K of x·W (for the token table: D)
  size_t cols = 0;          // N (for the token table: V)
  WeightFormat effective = WeightFormat::kF32;  // never kAsStored
  // The format asked for (resolved: kAsStored becomes the stored type) did not
  // fit this matrix and `effective` is the fallback.
  bool fallback = false;
  WeightFormat wanted = WeightFormat::kF32;
  // Kept in the file's own bytes (kAsStored on a compressed GGUF tensor).
  bool as_stored = false;
  // A mix: the ggml type llama-quantize gives this matrix ("q4_k", "q6_k", "q5_0", ...;
  // `wanted` and `effective` are that format); empty otherwise.
  std::string mix_type;
};

// Fallbacks of a plan as one line, e.g. "blocks.0.ffn.down.weight q8_0 -> f16
// (K = 48 is not a multiple of 32)"; empty when there are none. (The multiple is the
// one the wanted format needs: 256 for the K-quants.)
std::string DescribeFallbacks(const std::vector<MatrixWeightFormat>& plan);

// Whether a matrix kept in `format` multiplies int8-rounded activations when
// EngineOptions::int8_activations is set: q8_0, q4_0, q5_0, q4_1, q5_1, iq4_nl, iq4_xs
// and the K-quants (every quantized format has an int8 kernel); a mix's own value is false (its matrices
// each have one of those).
bool ReachedByInt8Activations(WeightFormat format);

}  // namespace kvrt
