// The bridge between the public WeightFormat and the kernels' simd::CompressedFormat,
// and which block parameters are weight matrices.
#pragma once

#include <array>
#include <cstddef>
#include <optional>

#include "model/decoder_model.h"
#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/weight_format.h"

namespace kvrt::detail {

// The seven matrices of a block, in parameter order.
inline constexpr std::array<BlockSlot, 7> kBlockMatrixSlots = {
    BlockSlot::kQuery, BlockSlot::kKey,  BlockSlot::kValue, BlockSlot::kOutput,
    BlockSlot::kGate,  BlockSlot::kUp,   BlockSlot::kDown};

// Values of WeightFormat (the enum's last one plus one), for tables indexed by format;
// a value the enum skips is never used as an index (IsKnownWeightFormat refuses it).
inline constexpr size_t kWeightFormatCount = static_cast<size_t>(WeightFormat::kQ2_K) + 1;

// The kernels' type of a compressed format; nullopt for kF32 and kAsStored.
inline std::optional<simd::CompressedFormat> CompressedFormatOf(WeightFormat format) {
  switch (format) {
    case WeightFormat::kBf16: return simd::CompressedFormat::kBf16;
    case WeightFormat::kF16: return simd::CompressedFormat::kF16;
    case WeightFormat::kQ8_0: return simd::CompressedFormat::kQ8_0;
    case WeightFormat::kQ4_0: return simd::CompressedFormat::kQ4_0;
    case WeightFormat::kQ5_0: return simd::CompressedFormat::kQ5_0;
    case WeightFormat::kIQ4_NL: return simd::CompressedFormat::kIQ4_NL;
    case WeightFormat::kIQ4_XS: return simd::CompressedFormat::kIQ4_XS;
    case WeightFormat::kQ4_1: return simd::CompressedFormat::kQ4_1;
    case WeightFormat::kQ5_1: return simd::CompressedFormat::kQ5_1;
    case WeightFormat::kQ4_K: return simd::CompressedFormat::kQ4_K;
    case WeightFormat::kQ5_K: return simd::CompressedFormat::kQ5_K;
    case WeightFormat::kQ2_K: return simd::CompressedFormat::kQ2_K;
    case WeightFormat::kQ3_K: return simd::CompressedFormat::kQ3_K;
    case WeightFormat::kQ6_K: return simd::CompressedFormat::kQ6_K;
    default: return std::nullopt;
  }
}

}  // namespace kvrt::detail
