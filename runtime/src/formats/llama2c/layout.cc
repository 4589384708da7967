#include "formats/llama2c/layout.h"

#include <optional>

#include "core/checked_math.h"
#include "formats/llama2c/llama2c.h"
#include "model/decoder_model.h"

namespace kvrt {

namespace llama2c {

std::vector<Section> FileSections(const ModelConfig& config) {
  const size_t v = config.vocabulary_size, d = config.model_width, f = config.feed_forward_width;
  const size_t kv = config.kv_width(), layers = config.layers;
  std::vector<Section> sections;
  sections.push_back({SectionKind::kMatrix, 0, v, d, false});
  // Every per-layer tensor is stored as one [layers, ...] stack.
  auto stack = [&](SectionKind kind, BlockSlot slot, size_t rows, size_t columns) {
    for (size_t layer = 0; layer < layers; ++layer) {
      sections.push_back({kind, BlockParameterIndex(layer, slot), rows, columns, true});
    }
  };
  stack(SectionKind::kGain, BlockSlot::kAttentionNorm, 1, d);
  stack(SectionKind::kMatrix, BlockSlot::kQuery, d, d);
  stack(SectionKind::kMatrix, BlockSlot::kKey, kv, d);
  stack(SectionKind::kMatrix, BlockSlot::kValue, kv, d);
  stack(SectionKind::kMatrix, BlockSlot::kOutput, d, d);
  stack(SectionKind::kGain, BlockSlot::kFeedForwardNorm, 1, d);
  stack(SectionKind::kMatrix, BlockSlot::kGate, f, d);
  stack(SectionKind::kMatrix, BlockSlot::kDown, d, f);
  stack(SectionKind::kMatrix, BlockSlot::kUp, f, d);
  const size_t final_norm = 1 + kParametersPerBlock * layers;
  sections.push_back({SectionKind::kGain, final_norm, 1, d, true});
  sections.push_back({SectionKind::kRopeTables, 0, 2 * config.max_positions, config.head_width() / 2, true});
  if (!config.tied_output) sections.push_back({SectionKind::kMatrix, final_norm + 1, v, d, true});
  return sections;
}

}  // namespace llama2c

Result<uint64_t> Llama2cFileBytes(const ModelConfig& config) {
  // Σ rows·columns over the sections, computed arithmetically: a hostile layer
  // count must not make this allocate a section list.
  const size_t v = config.vocabulary_size, d = config.model_width, f = config.feed_forward_width;
  const size_t kv = config.kv_width();
  auto sum = [](std::initializer_list<std::optional<size_t>> parts) -> std::optional<size_t> {
    size_t total = 0;
    for (const std::optional<size_t>& part : parts) {
      if (!part) return std::nullopt;
      const std::optional<size_t> next = CheckedAdd(total, *part);
      if (!next) return std::nullopt;
      total = *next;
    }
    return total;
  };
  const std::optional<size_t> dd = CheckedMul(d, d), dkv = CheckedMul(d, kv), df = CheckedMul(d, f);
  const std::optional<size_t> per_layer =
      sum({CheckedMul(2, d), dd ? CheckedMul(2, *dd) : std::nullopt,
           dkv ? CheckedMul(2, *dkv) : std::nullopt, df ? CheckedMul(3, *df) : std::nullopt});
  const std::optional<size_t> floats =
      sum({CheckedMul(v, d), per_layer ? CheckedMul(*per_layer, config.layers) : std::nullopt,
           std::optional<size_t>(d), CheckedMul(config.max_positions, config.head_width()),
           config.tied_output ? std::optional<size_t>(0) : CheckedMul(v, d)});
  const std::optional<size_t> bytes = floats ? CheckedMul(*floats, sizeof(float)) : std::nullopt;
  const std::optional<size_t> total = bytes ? CheckedAdd(*bytes, kLlama2cHeaderBytes) : std::nullopt;
  if (!total) {
    return Fail(ErrorCode::kSizeOverflow, {{"context", std::string("llama2.c checkpoint size")}},
                "the llama2.c checkpoint size overflows");
  }
  return uint64_t{*total};
}

}  // namespace kvrt
