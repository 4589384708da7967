// The per-matrix weight plan (weights/weight_plan.h).
#include "weights/weight_plan.h"

#include <optional>
#include <string>

#include "kvrt/simd/compressed_matrix.h"
#include "weights/compressed_format.h"
#include "weights/k_quant_mix.h"

namespace kvrt {
namespace {

// llama.cpp's fallback for a block type that does not divide a row of `rows`
// (llama_tensor_get_type): q6_k becomes q8_0, q4_k q5_0, q5_k q5_1, q2_k, q3_k and
// iq4_xs iq4_nl, and a type whose block still does not divide the row f16, where
// ggml's chain ends.
WeightFormat Fallback(WeightFormat wanted, size_t rows) {
  if (wanted == WeightFormat::kQ6_K && simd::FitsCompressedFormat(simd::CompressedFormat::kQ8_0, rows)) {
    return WeightFormat::kQ8_0;
  }
  if (wanted == WeightFormat::kQ4_K && simd::FitsCompressedFormat(simd::CompressedFormat::kQ5_0, rows)) {
    return WeightFormat::kQ5_0;
  }
  if (wanted == WeightFormat::kQ5_K && simd::FitsCompressedFormat(simd::CompressedFormat::kQ5_1, rows)) {
    return WeightFormat::kQ5_1;
  }
  if ((wanted == WeightFormat::kIQ4_XS || wanted == WeightFormat::kQ3_K || wanted == WeightFormat::kQ2_K) &&
      simd::FitsCompressedFormat(simd::CompressedFormat::kIQ4_NL, rows)) {
    return WeightFormat::kIQ4_NL;
  }
  return WeightFormat::kF16;
}

detail::KQuantMix MixOf(WeightFormat mix) {
  switch (mix) {
    case WeightFormat::kQ4_K_S: return detail::KQuantMix::kQ4_K_S;
    case WeightFormat::kQ4_K_M: return detail::KQuantMix::kQ4_K_M;
    case WeightFormat::kQ5_K_S: return detail::KQuantMix::kQ5_K_S;
    case WeightFormat::kQ3_K_M: return detail::KQuantMix::kQ3_K_M;
    default: return detail::KQuantMix::kQ5_K_M;
  }
}

// The format of a mix's choice: every type llama.cpp's mixes choose is one.
WeightFormat FormatOfMixType(detail::MixTensorType type) {
  switch (type) {
    case detail::MixTensorType::kF16: return WeightFormat::kF16;
    case detail::MixTensorType::kQ8_0: return WeightFormat::kQ8_0;
    case detail::MixTensorType::kQ5_0: return WeightFormat::kQ5_0;
    case detail::MixTensorType::kQ5_1: return WeightFormat::kQ5_1;
    case detail::MixTensorType::kQ2_K: return WeightFormat::kQ2_K;
    case detail::MixTensorType::kQ3_K: return WeightFormat::kQ3_K;
    case detail::MixTensorType::kIQ4_NL: return WeightFormat::kIQ4_NL;
    case detail::MixTensorType::kQ4_K: return WeightFormat::kQ4_K;
    case detail::MixTensorType::kQ5_K: return WeightFormat::kQ5_K;
    case detail::MixTensorType::kQ6_K: return WeightFormat::kQ6_K;
  }
  return WeightFormat::kF16;
}

// Where a matrix sits in the model, for the mixes' rules.
struct MatrixPlace {
  detail::MixMatrix matrix = detail::MixMatrix::kTokenTable;
  size_t layer = 0;
};

detail::MixMatrix MixMatrixOf(BlockSlot slot) {
  switch (slot) {
    case BlockSlot::kQuery: return detail::MixMatrix::kQuery;
    case BlockSlot::kKey: return detail::MixMatrix::kKey;
    case BlockSlot::kValue: return detail::MixMatrix::kValue;
    case BlockSlot::kOutput: return detail::MixMatrix::kAttentionOutput;
    case BlockSlot::kGate: return detail::MixMatrix::kGate;
    case BlockSlot::kUp: return detail::MixMatrix::kUp;
    default: return detail::MixMatrix::kDown;
  }
}

void PlanMixed(WeightFormat mix, const MatrixPlace& place, const detail::MixModel& model,
               MatrixWeightFormat& plan) {
  const detail::MixTensorType type = detail::KQuantMixType(MixOf(mix), place.matrix, place.layer, plan.rows, model);
  plan.mix_type = std::string(detail::MixTensorTypeName(type));
  plan.wanted = FormatOfMixType(type);
  plan.effective = plan.wanted;
}

MatrixWeightFormat Plan(const Parameter& parameter, size_t index, bool transposed,
                        WeightFormat requested, const MatrixPlace& place, const detail::MixModel& model) {
  MatrixWeightFormat plan;
  plan.parameter = index;
  plan.name = parameter.name();
  plan.rows = transposed ? parameter.shape()[1] : parameter.shape()[0];
  plan.cols = transposed ? parameter.shape()[0] : parameter.shape()[1];
  if (IsWeightMix(requested)) {
    PlanMixed(requested, place, model, plan);
    return plan;
  }
  WeightFormat wanted = requested;
  if (requested == WeightFormat::kAsStored) {
    const StoredWeights* stored = parameter.stored();
    wanted = stored != nullptr ? stored->format : WeightFormat::kF32;
    plan.as_stored = stored != nullptr;
  }
  plan.wanted = wanted;
  plan.effective = wanted;
  const std::optional<simd::CompressedFormat> type = detail::CompressedFormatOf(wanted);
  if (type && !simd::FitsCompressedFormat(*type, plan.rows)) {
    plan.effective = Fallback(wanted, plan.rows);
    plan.fallback = true;
  }
  return plan;
}

}  // namespace

std::vector<MatrixWeightFormat> PlanWeightFormats(const DecoderModel& model,
                                                  WeightFormat requested) {
  std::vector<MatrixWeightFormat> plan;
  const ModelConfig& config = model.config();
  detail::MixModel mix_model;
  mix_model.layers = config.layers;
  mix_model.heads = config.heads;
  mix_model.kv_heads = config.kv_heads;
  mix_model.head_is_token_table = model.output_head_is_embedding();
  plan.push_back(Plan(model.parameter(0), 0, true, requested, {detail::MixMatrix::kTokenTable, 0}, mix_model));
  for (size_t layer = 0; layer < config.layers; ++layer) {
    for (BlockSlot slot : detail::kBlockMatrixSlots) {
      const size_t index = BlockParameterIndex(layer, slot);
      plan.push_back(Plan(model.parameter(index), index, false, requested, {MixMatrixOf(slot), layer}, mix_model));
    }
  }
  if (!model.output_head_is_embedding()) {
    const size_t index = OutputHeadIndex(config);
    plan.push_back(Plan(model.parameter(index), index, false, requested, {detail::MixMatrix::kHead, 0}, mix_model));
  }
  return plan;
}


}  // namespace kvrt
