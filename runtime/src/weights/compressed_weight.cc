#include "weights/compressed_weight.h"

#include <string>

#include "model/panel_layout.h"
#include "weights/compressed_format.h"

namespace kvrt::detail {
namespace {

Error OutOfMemory(const std::string& what, size_t elements) {
  return Error(ErrorCode::kAllocationFailed, {{"elements", uint64_t{elements}}},
               "could not allocate the compressed " + what);
}

// Row-major values of the parameter's shape, each rounded to f32 (panel layouts
// already hold f32).
void ReadFloatValues(const Parameter& parameter, float* out) {
  if (parameter.is_dense()) {
    const std::span<const double> values = parameter.values();
    for (size_t i = 0; i < values.size(); ++i) out[i] = static_cast<float>(values[i]);
    return;
  }
  const std::vector<size_t>& shape = parameter.shape();
  const bool transposed = parameter.layout() == ParameterLayout::kTransposedPanelsF32;
  const std::span<const float> panels = parameter.panels();
  for (size_t row = 0; row < shape[0]; ++row) {
    for (size_t column = 0; column < shape[1]; ++column) {
      const PanelCoordinates at = PanelCoordinatesOf(row, column, shape[0], shape[1], transposed);
      out[row * shape[1] + column] = panels[PanelOffset<float>(at.k, at.n, at.rows)];
    }
  }
}

}  // namespace

Result<CompressedWeight> PackCompressedWeight(const Parameter& parameter, bool transposed,
                                              const MatrixWeightFormat& plan) {
  const simd::CompressedFormat type = *CompressedFormatOf(plan.effective);
  const size_t k = plan.rows, n = plan.cols;
  const size_t bytes = simd::CompressedMatrixBytes(type, k, n);
  if (bytes == SIZE_MAX) {
    return Fail(ErrorCode::kSizeOverflow, {{"context", std::string(parameter.name())}},
                "the compressed size of " + parameter.name() + " overflows");
  }
  std::optional<Buffer<uint8_t>> owned = Buffer<uint8_t>::Allocate(bytes, Pages::kHuge);
  if (!owned) return Fail(OutOfMemory(parameter.name(), k * n));
  const StoredWeights* stored = parameter.stored();
  if (plan.as_stored && stored != nullptr && stored->format == plan.effective) {
    // ggml rows are N rows of K for every matrix, the token table included.
    simd::RepackGgml(type, stored->bytes.data(), k, n, owned->data());
  } else {
    // The parameter's row-major values are [K, N], or [N, K] for a table.
    std::optional<Buffer<float>> values = Buffer<float>::Allocate(parameter.element_count());
    if (!values) return Fail(OutOfMemory(parameter.name(), k * n));
    ReadFloatValues(parameter, values->data());
    simd::PackCompressed(type, values->data(), k, n, transposed, owned->data());
  }
  CompressedWeight weight;
  weight.view.type = type;
  weight.view.data = owned->data();
  weight.view.rows = k;
  weight.view.cols = n;
  weight.owned = std::move(*owned);
  return weight;
}

Result<void> QuantizedValues(const Parameter& parameter, bool transposed,
                             const MatrixWeightFormat& plan, std::span<double> out) {
  const size_t columns = parameter.shape()[1];
  if (!CompressedFormatOf(plan.effective)) {
    std::optional<Buffer<float>> values = Buffer<float>::Allocate(parameter.element_count());
    if (!values) return Fail(OutOfMemory(parameter.name(), parameter.element_count()));
    ReadFloatValues(parameter, values->data());
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>((*values)[i]);
    return {};
  }
  Result<CompressedWeight> packed = PackCompressedWeight(parameter, transposed, plan);
  if (!packed) return Fail(std::move(packed.error()));
  // Element (row, column) of the parameter is (k, n) = (column, row) of a table.
  for (size_t row = 0; row < parameter.shape()[0]; ++row) {
    for (size_t column = 0; column < columns; ++column) {
      out[row * columns + column] = static_cast<double>(
          transposed ? packed->view.at(column, row) : packed->view.at(row, column));
    }
  }
  return {};
}

}  // namespace kvrt::detail
