// BuildLlamaModel: every tensor dequantized one GGUF row (ne0 values) at a time
// and scattered into its kvrt parameter, dense f64 or f32 panels, like
// LoadLlama2cModel does for llama2.c files.
#include "formats/gguf/gguf_llama.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <new>
#include <optional>
#include <utility>
#include <vector>

#include "formats/gguf/gguf_llama_names.h"
#include "core/buffer.h"
#include "model/parameter.h"
#include "kvrt/simd/packed_matrix.h"
#include "model/panel_layout.h"

namespace kvrt::gguf {
namespace {

Error NonFinite(const std::string& name, size_t index, float value) {
  return Error(ErrorCode::kNonFiniteParameter,
               {{"name", name}, {"index", uint64_t{index}}, {"value", double{value}}},
               "GGUF weight " + name + " has a non-finite value at flat index " + std::to_string(index));
}

// Where a dequantized value of stored (row, column) goes. A stored matrix is ne1
// rows of ne0: for every kvrt [in, out] matrix (and the [D, V] head) that is
// element (k = column, n = row); the [V, D] token table is the stored matrix
// itself, kept densely as rows and in panels as its [D, V] transpose, which is
// again (k = column, n = row).
// qwen2's NEOX RoPE in kvrt's interleaved pairs: within each head of `head_width`
// outputs, stored output i goes to 2i and i + hw/2 to 2i + 1. Inactive
// (head_width 0): every output stays where it is.
struct HeadInterleave {
  size_t head_width = 0;
  size_t operator()(size_t stored) const {
    if (head_width == 0) return stored;
    const size_t head = stored / head_width, within = stored % head_width, half = head_width / 2;
    return head * head_width + (within < half ? 2 * within : 2 * (within - half) + 1);
  }
};

struct Destination {
  bool gain = false;
  bool token_table = false;
  std::vector<double>* dense = nullptr;  // kDenseF64 (and every gain)
  float* panels = nullptr;               // kPanelsF32 matrices
  HeadInterleave outputs;                // where each output (matrix row, bias element) goes
};

void Store(const Destination& to, size_t stored_row, size_t stored_column, size_t ne0, size_t ne1, float value) {
  // A matrix's outputs are its stored rows; a bias's are its elements.
  const size_t row = to.gain ? stored_row : to.outputs(stored_row);
  const size_t column = to.gain ? to.outputs(stored_column) : stored_column;
  if (to.panels != nullptr) {
    to.panels[detail::PanelOffset<float>(column, row, ne0)] = value;
  } else if (to.gain || to.token_table) {
    (*to.dense)[row * ne0 + column] = value;
  } else {
    (*to.dense)[column * ne1 + row] = value;  // [in, out] = transpose of the stored rows
  }
}

// Dequantizes `tensor` row by row into `to`; the flat index of a bad value is
// the one of kvrt's row-major parameter.
Result<void> ReadTensor(const TensorInfo& tensor, const std::string& name, const Destination& to,
                        std::vector<float>& row_values) {
  const size_t ne0 = tensor.ne[0], ne1 = tensor.elements / tensor.ne[0];
  const size_t row_bytes = *RowBytes(tensor.type, ne0);  // checked when the file was parsed
  row_values.resize(ne0);
  for (size_t row = 0; row < ne1; ++row) {
    Dequantize(tensor.type, tensor.data.subspan(row * row_bytes, row_bytes), row_values);
    for (size_t column = 0; column < ne0; ++column) {
      const float value = row_values[column];
      if (!std::isfinite(value)) {
        const bool row_major = to.gain || to.token_table;
        const size_t out_row = to.gain ? row : to.outputs(row), out_column = to.gain ? to.outputs(column) : column;
        return Fail(NonFinite(name, row_major ? out_row * ne0 + out_column : out_column * ne1 + out_row, value));
      }
      Store(to, row, column, ne0, ne1, value);
    }
  }
  return {};
}

// A matrix tensor in one of the compressed weight formats, kept by reference so
// the fast engine can use it as stored (WeightFormat::kAsStored).
StoredWeights StoredForm(const GgufFile& file, const TensorInfo& tensor, bool gain, HeadInterleave outputs) {
  if (gain) return {};
  WeightFormat format = WeightFormat::kF32;
  switch (tensor.type) {
    case GgmlType::kBF16: format = WeightFormat::kBf16; break;
    case GgmlType::kF16: format = WeightFormat::kF16; break;
    case GgmlType::kQ8_0: format = WeightFormat::kQ8_0; break;
    case GgmlType::kQ4_0: format = WeightFormat::kQ4_0; break;
    case GgmlType::kQ5_0: format = WeightFormat::kQ5_0; break;
    case GgmlType::kQ4_1: format = WeightFormat::kQ4_1; break;
    case GgmlType::kQ5_1: format = WeightFormat::kQ5_1; break;
    case GgmlType::kQ2_K: format = WeightFormat::kQ2_K; break;
    case GgmlType::kQ3_K: format = WeightFormat::kQ3_K; break;
    case GgmlType::kIQ4_NL: format = WeightFormat::kIQ4_NL; break;
    case GgmlType::kIQ4_XS: format = WeightFormat::kIQ4_XS; break;
    case GgmlType::kQ4_K: format = WeightFormat::kQ4_K; break;
    case GgmlType::kQ5_K: format = WeightFormat::kQ5_K; break;
    case GgmlType::kQ6_K: format = WeightFormat::kQ6_K; break;
    default: return {};
  }
  if (outputs.head_width == 0) return StoredWeights{format, tensor.data, file.mapping()};
  // Interleaved rows are a copy: every row is whole blocks, so rows move as bytes.
  const size_t rows = tensor.ne[1], row_bytes = tensor.data.size() / rows;
  auto copy = std::make_shared<std::vector<uint8_t>>(tensor.data.size());
  for (size_t row = 0; row < rows; ++row) {
    std::copy_n(tensor.data.data() + row * row_bytes, row_bytes, copy->data() + outputs(row) * row_bytes);
  }
  const std::span<const uint8_t> bytes(*copy);
  return StoredWeights{format, bytes, std::move(copy)};
}

Result<ParameterPtr> BuildParameter(const GgufFile& file, const TensorInfo& tensor, std::string name,
                                    std::vector<size_t> shape, bool token_table, HeadInterleave outputs,
                                    ModelStorage storage, std::vector<float>& row_values) {
  const bool gain = shape.size() == 1;
  if (gain || storage == ModelStorage::kDenseF64) {
    std::vector<double> values(tensor.elements);
    Destination to{gain, token_table, &values, nullptr, outputs};
    if (auto read = ReadTensor(tensor, name, to, row_values); !read) return Fail(std::move(read.error()));
    return Parameter::Create(std::move(name), std::move(shape), values, StoredForm(file, tensor, gain, outputs));
  }
  const size_t k = tensor.ne[0], n = tensor.ne[1];  // the [K, N] matrix in panels
  std::optional<Buffer<float>> panels =
      Buffer<float>::Allocate(simd::PackedElementCount<float>(k, n), Pages::kHuge);
  if (!panels) {
    return Fail(ErrorCode::kAllocationFailed, {{"elements", uint64_t{k * n}}},
                "could not allocate the panels of GGUF tensor " + name);
  }
  Destination to{false, token_table, nullptr, panels->data(), outputs};
  if (auto read = ReadTensor(tensor, name, to, row_values); !read) return Fail(std::move(read.error()));
  return Parameter::CreatePanels(std::move(name), std::move(shape),
                                 token_table ? ParameterLayout::kTransposedPanelsF32 : ParameterLayout::kPanelsF32,
                                 std::move(*panels), StoredForm(file, tensor, false, outputs));
}

// Whether parameter `index` holds query or key outputs (a projection or its bias).
bool IsRotatedProjection(const ModelConfig& config, size_t index) {
  if (const std::optional<BiasPosition> bias = BiasAt(config, index)) {
    return bias->projection != BlockSlot::kValue;
  }
  if (index == 0 || index >= FinalNormIndex(config)) return false;
  const auto slot = static_cast<BlockSlot>((index - 1) % kParametersPerBlock);
  return slot == BlockSlot::kQuery || slot == BlockSlot::kKey;
}

}  // namespace

Result<DecoderModel> BuildLlamaModel(const GgufFile& file, ModelStorage storage) try {
  Result<ModelConfig> config = LlamaConfig(file);
  if (!config) return Fail(std::move(config.error()));
  const bool neox = *ArchitectureOf(file) == GgufArchitecture::kQwen2;  // LlamaConfig checked it
  if (auto tensors = ValidateLlamaTensors(file, *config); !tensors) return Fail(std::move(tensors.error()));
  // Every tensor exists with its expected shape, so these lists are sized by
  // the file's own tensor table.
  const std::vector<std::string> names = ParameterNames(*config);
  const std::vector<std::vector<size_t>> shapes = ParameterShapes(*config);
  std::vector<ParameterPtr> nodes;
  nodes.reserve(names.size());
  std::vector<float> row_values;
  for (size_t i = 0; i < names.size(); ++i) {
    const TensorInfo& tensor = *file.FindTensor(GgufTensorName(*config, i));
    const HeadInterleave outputs{neox && IsRotatedProjection(*config, i) ? config->head_width() : 0};
    Result<ParameterPtr> node =
        BuildParameter(file, tensor, names[i], shapes[i], i == 0, outputs, storage, row_values);
    if (!node) return Fail(std::move(node.error()));
    nodes.push_back(std::move(*node));
  }
  return DecoderModel::FromParameters(*config, std::move(nodes));
} catch (const std::bad_alloc&) {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate the weights of " + file.path());
}

Result<DecoderModel> LoadGgufModel(const std::string& path, ModelStorage storage) {
  Result<GgufFile> file = GgufFile::Open(path);
  if (!file) return Fail(std::move(file.error()));
  return BuildLlamaModel(*file, storage);
}

}  // namespace kvrt::gguf
