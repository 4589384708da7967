// Names of the weight formats and the per-matrix plan (kvrt/weight_format.h).
#include "kvrt/weight_format.h"

#include <cmath>
#include <limits>

#include "model/decoder_model.h"
#include "kvrt/simd/compressed_matrix.h"
#include "weights/compressed_format.h"

namespace kvrt {
namespace {

constexpr struct {
  WeightFormat format;
  std::string_view name;
} kNames[] = {
    {WeightFormat::kAsStored, "as-stored"}, {WeightFormat::kF32, "f32"},
    {WeightFormat::kBf16, "bf16"},          {WeightFormat::kF16, "f16"},
    {WeightFormat::kQ8_0, "q8_0"},          {WeightFormat::kQ4_0, "q4_0"},
};

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
  const std::optional<simd::WeightType> type = detail::CompressedType(wanted);
  if (type && !simd::FitsWeightType(*type, plan.rows)) {
    // ggml's quantizer ends at f16 when a block type does not divide the row.
    plan.effective = WeightFormat::kF16;
    plan.fallback = true;
  }
  return plan;
}

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

double WeightFormatBytesPerWeight(WeightFormat format) {
  switch (format) {
    case WeightFormat::kF32: return 4.0;
    case WeightFormat::kBf16:
    case WeightFormat::kF16: return 2.0;
    case WeightFormat::kQ8_0: return 34.0 / 32.0;
    case WeightFormat::kQ4_0: return 18.0 / 32.0;
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

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
    const size_t index = model.parameters().size() - 1;
    plan.push_back(Plan(model.parameter(index), index, false, requested));
  }
  return plan;
}

std::string DescribeFallbacks(const std::vector<MatrixWeightFormat>& plan) {
  std::string text;
  for (const MatrixWeightFormat& matrix : plan) {
    if (!matrix.fallback) continue;
    if (!text.empty()) text += ", ";
    text += matrix.name + " " + std::string(WeightFormatName(matrix.wanted)) + " -> " +
            std::string(WeightFormatName(matrix.effective)) + " (K = " +
            std::to_string(matrix.rows) + " is not a multiple of 32)";
  }
  return text;
}

}  // namespace kvrt
