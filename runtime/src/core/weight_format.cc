// Names and sizes of the weight formats (kvrt/weight_format.h).
#include "kvrt/weight_format.h"

#include <limits>
#include <string>

namespace kvrt {
namespace {

constexpr struct {
  WeightFormat format;
  std::string_view name;
} kNames[] = {
    {WeightFormat::kAsStored, "as-stored"}, {WeightFormat::kF32, "f32"},
    {WeightFormat::kBf16, "bf16"},          {WeightFormat::kF16, "f16"},
    {WeightFormat::kQ8_0, "q8_0"},          {WeightFormat::kQ4_0, "q4_0"},
    {WeightFormat::kQ4_K, "q4_k"},          {WeightFormat::kQ6_K, "q6_k"},
    {WeightFormat::kQ5_K, "q5_k"},          {WeightFormat::kQ4_K_S, "q4_k_s"},
    {WeightFormat::kQ4_K_M, "q4_k_m"},      {WeightFormat::kQ5_K_S, "q5_k_s"},
    {WeightFormat::kQ5_K_M, "q5_k_m"},      {WeightFormat::kQ5_0, "q5_0"},
    {WeightFormat::kQ3_K, "q3_k"},          {WeightFormat::kQ3_K_M, "q3_k_m"},
    {WeightFormat::kIQ4_NL, "iq4_nl"},      {WeightFormat::kIQ4_XS, "iq4_xs"},
    {WeightFormat::kQ4_1, "q4_1"},          {WeightFormat::kQ5_1, "q5_1"},
    {WeightFormat::kQ2_K, "q2_k"},
};

}  // namespace

std::string_view WeightFormatName(WeightFormat format) {
  for (const auto& entry : kNames) {
    if (entry.format == format) return entry.name;
  }
  return "unknown";
}

std::optional<WeightFormat> ParseWeightFormat(std::string_view name) {
  for (const auto& entry : kNames) {
    if (entry.name == name) return entry.format;
  }
  return std::nullopt;
}

bool IsKnownWeightFormat(WeightFormat format) { return WeightFormatName(format) != "unknown"; }

bool IsWeightMix(WeightFormat format) {
  return format == WeightFormat::kQ4_K_S || format == WeightFormat::kQ4_K_M ||
         format == WeightFormat::kQ5_K_S || format == WeightFormat::kQ5_K_M ||
         format == WeightFormat::kQ3_K_M;
}

double WeightFormatBytesPerWeight(WeightFormat format) {
  switch (format) {
    case WeightFormat::kF32: return 4.0;
    case WeightFormat::kBf16:
    case WeightFormat::kF16: return 2.0;
    case WeightFormat::kQ8_0: return 34.0 / 32.0;
    case WeightFormat::kQ4_0:
    case WeightFormat::kIQ4_NL: return 18.0 / 32.0;
    case WeightFormat::kQ5_0: return 22.0 / 32.0;
    case WeightFormat::kQ4_1: return 20.0 / 32.0;
    case WeightFormat::kQ5_1: return 24.0 / 32.0;
    // The panel layout keeps q4_k's and q5_k's scales and minimums unpacked: 148 and
    // 180 bytes per 256 weights (ggml packs them into 144 and 176).
    case WeightFormat::kQ4_K: return 148.0 / 256.0;
    case WeightFormat::kQ5_K: return 180.0 / 256.0;
    case WeightFormat::kQ6_K: return 210.0 / 256.0;
    // q3_k's quants kept a nibble each, its scales an int8 each: 146 bytes per 256
    // weights (ggml packs them into 110).
    case WeightFormat::kQ3_K: return 146.0 / 256.0;
    // iq4_xs's panel layout keeps a byte per block scale and one unused (ggml: 6 bits).
    case WeightFormat::kIQ4_XS: return 146.0 / 256.0;
    // q2_k's panels keep ggml's own bytes: 2-bit quants, a byte of 4-bit scale and
    // minimum per 16 weights, d and dmin per 256.
    case WeightFormat::kQ2_K: return 84.0 / 256.0;
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

size_t WeightFormatRowMultiple(WeightFormat format) {
  switch (format) {
    case WeightFormat::kQ8_0:
    case WeightFormat::kQ4_0:
    case WeightFormat::kQ5_0:
    case WeightFormat::kQ4_1:
    case WeightFormat::kQ5_1:
    case WeightFormat::kIQ4_NL: return 32;
    case WeightFormat::kQ2_K:
    case WeightFormat::kQ3_K:
    case WeightFormat::kQ4_K:
    case WeightFormat::kQ5_K:
    case WeightFormat::kQ6_K:
    case WeightFormat::kIQ4_XS: return 256;
    default: return 1;
  }
}

std::string DescribeFallbacks(const std::vector<MatrixWeightFormat>& plan) {
  std::string text;
  for (const MatrixWeightFormat& matrix : plan) {
    if (!matrix.fallback) continue;
    if (!text.empty()) text += ", ";
    text += matrix.name + " " + std::string(WeightFormatName(matrix.wanted)) + " -> " +
            std::string(WeightFormatName(matrix.effective)) + " (K = " +
            std::to_string(matrix.rows) + " is not a multiple of " +
            std::to_string(WeightFormatRowMultiple(matrix.wanted)) + ")";
  }
  return text;
}

}  // namespace kvrt
