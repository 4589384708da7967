// The per-matrix weight plan (weights/weight_plan.h).
#include "weights/weight_plan.h"

#include "kvrt/simd/compressed_matrix.h"
#include "weights/compressed_format.h"

namespace kvrt {
namespace {

// llama.cpp's fallback for a block type that does not divide a row of `rows`
// (llama_tensor_get_type): q6_k becomes q8_0, and a type whose block still does not
// divide the row f16, where ggml's chain ends. (q4_k's and q5_k's first fallbacks,
// q5_0 and q5_1, are not formats here: q4_k and q5_k go straight to f16.)
WeightFormat Fallback(WeightFormat wanted, size_t rows) {
  if (wanted == WeightFormat::kQ6_K && simd::FitsCompressedFormat(simd::CompressedFormat::kQ8_0, rows)) {
    return WeightFormat::kQ8_0;
  }
  return WeightFormat::kF16;
}

MatrixWeightFormat Plan(const Parameter& parameter, size_t index, bool transposed,
                        WeightFormat requested) {
  MatrixWeightFormat plan;
  plan.parameter = index;
  plan.name = parameter.name();
  plan.rows = transposed ? parameter.shape()[1] : parameter.shape()[0];
  plan.cols = transposed ? parameter.shape()[0] : parameter.shape()[1];
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
  plan.push_back(Plan(model.parameter(0), 0, true, requested));
  for (size_t layer = 0; layer < config.layers; ++layer) {
    for (BlockSlot slot : detail::kBlockMatrixSlots) {
      const size_t index = BlockParameterIndex(layer, slot);
      plan.push_back(Plan(model.parameter(index), index, false, requested));
    }
  }
  if (!model.output_head_is_embedding()) {
    const size_t index = OutputHeadIndex(config);
    plan.push_back(Plan(model.parameter(index), index, false, requested));
  }
  return plan;
}


}  // namespace kvrt
