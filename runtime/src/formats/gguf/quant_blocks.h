// ggml's quantized block formats, decoded to f32 exactly as ggml's reference
// dequantizers compute them (the block layouts are those of ggml-common.h).
//
// Each value is one f32 expression of an f16 scale (and minimum) and small
// integers, evaluated in ggml's order without contraction, so a value read here
// is the f32 number the file means; widening it to f64 loses nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace kvrt::gguf {

// Elements per block: 32 for the legacy and IQ4_NL blocks, 256 for the K-quant
// super-blocks and IQ4_XS.
inline constexpr size_t kLegacyBlock = 32;
inline constexpr size_t kSuperBlock = 256;

// `out.size()` values, a whole number of blocks, from exactly that many blocks of
// `bytes` (the caller has checked the length against the type's row size).
void DequantizeQ8_0(std::span<const uint8_t> bytes, std::span<float> out);
void DequantizeQ4_0(std::span<const uint8_t> bytes, std::span<float> out);
void DequantizeQ4_1(std::span<const uint8_t> bytes, std::span<float> out);
void DequantizeQ5_0(std::span<const uint8_t> bytes, std::span<float> out);
void DequantizeQ5_1(std::span<const uint8_t> bytes, std::span<float> out);
void DequantizeQ2_K(std::span<const uint8_t> bytes, std::span<float> out);
void DequantizeQ3_K(std::span<const uint8_t> bytes, std::span<float> out);
void DequantizeQ4_K(std::span<const uint8_t> bytes, std::span<float> out);
void DequantizeQ5_K(std::span<const uint8_t> bytes, std::span<float> out);
void DequantizeQ6_K(std::span<const uint8_t> bytes, std::span<float> out);
void DequantizeIq4_Nl(std::span<const uint8_t> bytes, std::span<float> out);
void DequantizeIq4_Xs(std::span<const uint8_t> bytes, std::span<float> out);

}  // namespace kvrt::gguf
