#include "formats/gguf/tensor_types.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>

#include "core/checked_math.h"
#include "formats/gguf/quant_blocks.h"
#include "kvrt/simd/compressed_matrix.h"

namespace kvrt::gguf {
namespace {

using T = GgmlType;

// Block geometry of every type GGUF files may name (ggml's type traits table).
constexpr std::array<GgmlTypeInfo, 31> kTypes = {{
    // type, name, elements and bytes per block, readable, writable
    {T::kF32, "F32", 1, 4, true, true},             {T::kF16, "F16", 1, 2, true, true},
    {T::kQ4_0, "Q4_0", 32, 18, true, true},         {T::kQ4_1, "Q4_1", 32, 20, true, false},
    {T::kQ5_0, "Q5_0", 32, 22, true, false},        {T::kQ5_1, "Q5_1", 32, 24, true, false},
    {T::kQ8_0, "Q8_0", 32, 34, true, true},         {T::kQ8_1, "Q8_1", 32, 36, false, false},
    {T::kQ2_K, "Q2_K", 256, 84, true, false},       {T::kQ3_K, "Q3_K", 256, 110, true, false},
    {T::kQ4_K, "Q4_K", 256, 144, true, false},      {T::kQ5_K, "Q5_K", 256, 176, true, false},
    {T::kQ6_K, "Q6_K", 256, 210, true, false},      {T::kQ8_K, "Q8_K", 256, 292, false, false},
    {T::kIQ2_XXS, "IQ2_XXS", 256, 66, false, false}, {T::kIQ2_XS, "IQ2_XS", 256, 74, false, false},
    {T::kIQ3_XXS, "IQ3_XXS", 256, 98, false, false}, {T::kIQ1_S, "IQ1_S", 256, 50, false, false},
    {T::kIQ4_NL, "IQ4_NL", 32, 18, true, false},    {T::kIQ3_S, "IQ3_S", 256, 110, false, false},
    {T::kIQ2_S, "IQ2_S", 256, 82, false, false},    {T::kIQ4_XS, "IQ4_XS", 256, 136, true, false},
    {T::kI8, "I8", 1, 1, false, false},             {T::kI16, "I16", 1, 2, false, false},
    {T::kI32, "I32", 1, 4, false, false},           {T::kI64, "I64", 1, 8, false, false},
    {T::kF64, "F64", 1, 8, false, false},           {T::kIQ1_M, "IQ1_M", 256, 56, false, false},
    {T::kBF16, "BF16", 1, 2, true, true},           {T::kTQ1_0, "TQ1_0", 256, 54, false, false},
    {T::kTQ2_0, "TQ2_0", 256, 66, false, false},
}};

constexpr size_t kQ8Bytes = 34, kQ4Bytes = 18, kBlock = 32;

uint16_t Load16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
void Store16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}

// ggml's reference quantizers, block by block (simd/compressed_matrix.h writes
// the same {f16 d; quants} blocks the file stores).
void QuantizeQ8_0(std::span<const float> values, std::span<uint8_t> out) {
  for (size_t block = 0; block < values.size() / kBlock; ++block) {
    simd::QuantizeBlockQ8_0(values.data() + block * kBlock, out.data() + block * kQ8Bytes);
  }
}

void QuantizeQ4_0(std::span<const float> values, std::span<uint8_t> out) {
  for (size_t block = 0; block < values.size() / kBlock; ++block) {
    simd::QuantizeBlockQ4_0(values.data() + block * kBlock, out.data() + block * kQ4Bytes);
  }
}

}  // namespace

std::optional<GgmlTypeInfo> FindGgmlType(uint32_t number) {
  for (const GgmlTypeInfo& info : kTypes) {
    if (static_cast<uint32_t>(info.type) == number) return info;
  }
  return std::nullopt;
}

const GgmlTypeInfo& TypeInfo(GgmlType type) {
  for (const GgmlTypeInfo& info : kTypes) {
    if (info.type == type) return info;
  }
  return kTypes[0];  // unreachable for enumerators
}

std::string_view GgmlTypeName(GgmlType type) { return TypeInfo(type).name; }

std::optional<size_t> RowBytes(GgmlType type, uint64_t elements) {
  const GgmlTypeInfo& info = TypeInfo(type);
  if (elements % info.block_elements != 0) return std::nullopt;
  return CheckedMul(static_cast<size_t>(elements / info.block_elements), info.block_bytes);
}

namespace {

std::string TypeList(bool GgmlTypeInfo::*flag) {
  std::string list;
  for (const GgmlTypeInfo& info : kTypes) {
    if (!(info.*flag)) continue;
    if (!list.empty()) list += ", ";
    list += info.name;
  }
  return list;
}

}  // namespace

Result<void> RequireSupported(GgmlType type, std::string_view tensor) {
  if (TypeInfo(type).readable) return {};
  const std::string name(GgmlTypeName(type));
  return Fail(ErrorCode::kUnsupportedTensorType, {{"tensor", std::string(tensor)}, {"type", name}},
              "tensor " + std::string(tensor) + " has type " + name +
                  ", which kvrt does not read (supported: " + TypeList(&GgmlTypeInfo::readable) + ")");
}

Result<void> RequireWritable(GgmlType type, std::string_view tensor) {
  if (TypeInfo(type).writable) return {};
  const std::string name(GgmlTypeName(type));
  return Fail(ErrorCode::kUnsupportedTensorType, {{"tensor", std::string(tensor)}, {"type", name}},
              "tensor " + std::string(tensor) + " has type " + name + ", which kvrt does not write (" +
                  TypeList(&GgmlTypeInfo::writable) + ")");
}

void Dequantize(GgmlType type, std::span<const uint8_t> bytes, std::span<float> out) {
  switch (type) {
    case T::kF32:
      for (size_t i = 0; i < out.size(); ++i) {
        uint32_t bits;
        std::memcpy(&bits, bytes.data() + 4 * i, 4);  // little-endian hosts only
        out[i] = std::bit_cast<float>(bits);
      }
      return;
    case T::kF16:
      for (size_t i = 0; i < out.size(); ++i) out[i] = HalfToFloat(Load16(bytes.data() + 2 * i));
      return;
    case T::kBF16:
      for (size_t i = 0; i < out.size(); ++i) out[i] = Bf16ToFloat(Load16(bytes.data() + 2 * i));
      return;
    case T::kQ8_0: return DequantizeQ8_0(bytes, out);
    case T::kQ4_0: return DequantizeQ4_0(bytes, out);
    case T::kQ4_1: return DequantizeQ4_1(bytes, out);
    case T::kQ5_0: return DequantizeQ5_0(bytes, out);
    case T::kQ5_1: return DequantizeQ5_1(bytes, out);
    case T::kQ2_K: return DequantizeQ2_K(bytes, out);
    case T::kQ3_K: return DequantizeQ3_K(bytes, out);
    case T::kQ4_K: return DequantizeQ4_K(bytes, out);
    case T::kQ5_K: return DequantizeQ5_K(bytes, out);
    case T::kQ6_K: return DequantizeQ6_K(bytes, out);
    case T::kIQ4_NL: return DequantizeIq4_Nl(bytes, out);
    case T::kIQ4_XS: return DequantizeIq4_Xs(bytes, out);
    default:
      return;  // callers check RequireSupported first
  }
}

void Quantize(GgmlType type, std::span<const float> values, std::span<uint8_t> out) {
  switch (type) {
    case T::kF32:
      for (size_t i = 0; i < values.size(); ++i) {
        const uint32_t bits = std::bit_cast<uint32_t>(values[i]);
        std::memcpy(out.data() + 4 * i, &bits, 4);
      }
      return;
    case T::kF16:
      for (size_t i = 0; i < values.size(); ++i) Store16(out.data() + 2 * i, FloatToHalf(values[i]));
      return;
    case T::kBF16:
      for (size_t i = 0; i < values.size(); ++i) Store16(out.data() + 2 * i, FloatToBf16(values[i]));
      return;
    case T::kQ8_0:
      return QuantizeQ8_0(values, out);
    case T::kQ4_0:
      return QuantizeQ4_0(values, out);
    default:
      return;
  }
}

float HalfToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000) << 16;
  const uint32_t exponent = (half >> 10) & 0x1F, mantissa = half & 0x3FF;
  if (exponent == 0) {  // zero or subnormal: mantissa · 2^−24, exact in f32
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t FloatToHalf(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t magnitude = bits & 0x7FFFFFFF;
  if (magnitude > 0x7F800000) {  // NaN: keep it quiet and keep the top payload bits
    return static_cast<uint16_t>(sign | 0x7E00 | ((magnitude >> 13) & 0x3FF));
  }
  if (magnitude >= 0x477FF000) return static_cast<uint16_t>(sign | 0x7C00);  // ≥ 65520 → inf
  if (magnitude < 0x38800000) {
    // Below 2^−14: a subnormal half, mantissa = round(|x|·2^24). Scaling by a power
    // of two is exact, nearbyint rounds ties to even; 1024 is the smallest normal.
    const float scaled = std::bit_cast<float>(magnitude) * 16777216.0f;
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(scaled)));
  }
  // Normal: round the 23-bit mantissa to 10 bits (ties to even), rebias 127 → 15;
  // a mantissa carry correctly bumps the exponent.
  const uint32_t rounded = magnitude + 0xFFF + ((magnitude >> 13) & 1);
  return static_cast<uint16_t>(sign | ((rounded - (112u << 23)) >> 13));
}

float Bf16ToFloat(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t FloatToBf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((bits >> 16) | 0x40);
  return static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}

}  // namespace kvrt::gguf
