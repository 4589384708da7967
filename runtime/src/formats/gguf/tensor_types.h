// ggml tensor types: which ones exist (by number, as GGUF files store them), how
// many bytes a row of each takes, exact decoding of the readable ones to float
// (F32, F16, BF16, the legacy Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 blocks, the K-quants
// Q2_K..Q6_K, IQ4_NL and IQ4_XS: quant_blocks.h), and encoding of the writable
// ones (F32, F16, BF16, Q8_0, Q4_0).
//
// Dequantization is exact: every value of a readable type is the f32 that
// ggml's reference dequantizer computes from the block, so widening it to
// double loses nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "kvrt/error.h"

namespace kvrt::gguf {

// The ggml type numbers of GGUF tensor infos (ggml.h's enum ggml_type). Numbers
// 4, 5, 31–33 and 36–38 belonged to types whose support was removed from GGUF.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
};

struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;  // "Q6_K"
  size_t block_elements;  // elements per block (1 for plain types)
  size_t block_bytes;     // bytes per block
  bool readable;          // kvrt can dequantize it
  bool writable;          // kvrt can quantize to it
};

// The traits of a known type number, or nullopt for an unknown one.
std::optional<GgmlTypeInfo> FindGgmlType(uint32_t number);
// Same for a value known to be a GgmlType enumerator.
const GgmlTypeInfo& TypeInfo(GgmlType type);
std::string_view GgmlTypeName(GgmlType type);

// Bytes of a row of `elements` values: nullopt when `elements` is not a whole
// number of blocks or the size overflows.
std::optional<size_t> RowBytes(GgmlType type, uint64_t elements);

// UnsupportedTensorType{tensor, type} naming the type and the types kvrt reads,
// or {} when `type` is readable.
Result<void> RequireSupported(GgmlType type, std::string_view tensor);
// The same for writing: UnsupportedTensorType unless kvrt can quantize to `type`.
Result<void> RequireWritable(GgmlType type, std::string_view tensor);

// Dequantizes `out.size()` values (a whole number of blocks) from `bytes`, which
// holds exactly RowBytes(type, out.size()) bytes. `type` must be readable.
void Dequantize(GgmlType type, std::span<const uint8_t> bytes, std::span<float> out);

// IEEE half and bfloat16 conversions; to-narrow rounds to nearest, ties to even
// (a NaN stays a quiet NaN with its sign).
float HalfToFloat(uint16_t half);
uint16_t FloatToHalf(float value);
float Bf16ToFloat(uint16_t bits);
uint16_t FloatToBf16(float value);

// Quantizes `values` (a whole number of 32-value blocks) into `out`, which has
// RowBytes(type, values.size()) bytes, the way ggml's reference quantizers do.
// `type` must be writable.
void Quantize(GgmlType type, std::span<const float> values, std::span<uint8_t> out);

}  // namespace kvrt::gguf
