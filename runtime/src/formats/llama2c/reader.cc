// LoadLlama2cModel: header, sizes against the file length, then one pass over the
// file through a bounded buffer that scatters every float straight into its
// parameter's panels (or gain vector). Nothing is allocated in proportion to the
// header before the file is known to hold exactly the bytes the header implies.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "formats/byte_order.h"
#include "formats/llama2c/errors.h"
#include "formats/llama2c/file_io.h"
#include "formats/llama2c/layout.h"
#include "core/buffer.h"
#include "formats/llama2c/llama2c.h"
#include "model/parameter.h"
#include "kvrt/simd/packed_matrix.h"
#include "model/panel_layout.h"

namespace kvrt {
namespace {

// 4 MiB of file per read: large enough to stream at disk speed, small next to
// any model worth streaming.
constexpr size_t kChunkFloats = size_t{1} << 20;

// The storage of every parameter while the file is read, in model order.
struct PendingParameters {
  std::vector<Buffer<float>> panels;       // matrices (empty for gains)
  std::vector<std::vector<double>> gains;  // gains (empty for matrices)
};

Result<PendingParameters> AllocateParameters(const std::vector<std::vector<size_t>>& shapes) {
  PendingParameters pending;
  pending.panels.resize(shapes.size());
  pending.gains.resize(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::vector<size_t>& shape = shapes[i];
    if (shape.size() == 1) {
      pending.gains[i].resize(shape[0]);
      continue;
    }
    // The token table (index 0) is kept transposed, as the [D, V] head.
    const size_t k = i == 0 ? shape[1] : shape[0], n = i == 0 ? shape[0] : shape[1];
    std::optional<Buffer<float>> panels =
        Buffer<float>::Allocate(simd::PackedElementCount<float>(k, n), Pages::kHuge);
    if (!panels) {
      return Fail(ErrorCode::kAllocationFailed, {{"elements", uint64_t{k * n}}},
                  "could not allocate the panels of a " + std::to_string(k) + "x" +
                      std::to_string(n) + " llama2.c matrix");
    }
    pending.panels[i] = std::move(*panels);
  }
  return pending;
}

Error NonFinite(const std::string& name, size_t index, float value) {
  return Error(ErrorCode::kNonFiniteParameter,
               {{"name", name}, {"index", uint64_t{index}}, {"value", double{value}}},
               "llama2.c weight " + name + " has a non-finite value at flat index " +
                   std::to_string(index));
}

// Reads one section and stores each value where the model keeps it.
Result<void> ReadSection(llama2c::InputFile& file, const llama2c::Section& section,
                         const std::string& name, std::span<uint8_t> chunk,
                         PendingParameters& pending) {
  const size_t total = section.rows * section.columns;
  size_t row = 0, column = 0;
  for (size_t done = 0; done < total;) {
    const size_t count = std::min(total - done, chunk.size() / sizeof(float));
    const std::span<uint8_t> bytes = chunk.first(count * sizeof(float));
    if (auto read = file.Read(bytes, name.empty() ? "llama2.c RoPE tables" : name); !read) {
      return read;
    }
    if (section.kind == llama2c::SectionKind::kRopeTables) {
      done += count;
      continue;  // kvrt computes its own table
    }
    float* panels = pending.panels[section.parameter].data();
    double* gains = pending.gains[section.parameter].data();
    for (size_t i = 0; i < count; ++i) {
      const float value = std::bit_cast<float>(llmcp35::LoadLittleEndian<uint32_t>(&bytes[4 * i]));
      if (!std::isfinite(value)) {
        // The index in kvrt's row-major order of the parameter.
        const size_t flat = section.transposed ? column * section.rows + row : row * section.columns + column;
        return Fail(NonFinite(name, flat, value));
      }
      if (section.kind == llama2c::SectionKind::kGain) {
        gains[column] = value;  // f32 → f64 is exact
      } else {
        // Stored (row, column) of an [out, in] matrix is panel element
        // (k = column, n = row) of the [in, out] matrix, for the [V, D] token
        // table (kept as its [D, V] transpose) just the same.
        panels[detail::PanelOffset<float>(column, row, section.columns)] = value;
      }
      if (++column == section.columns) {
        column = 0;
        ++row;
      }
    }
    done += count;
  }
  return {};
}

}  // namespace

Result<DecoderModel> LoadLlama2cModel(const std::string& path) {
  Result<llama2c::InputFile> file = llama2c::InputFile::Open(path);
  if (!file) return Fail(std::move(file.error()));
  if (file->size() < kLlama2cHeaderBytes) {
    return Fail(llama2c::Truncated("llama2.c header", kLlama2cHeaderBytes, file->size()));
  }
  std::array<uint8_t, kLlama2cHeaderBytes> header_bytes{};
  if (auto read = file->Read(header_bytes, "llama2.c header"); !read) return Fail(std::move(read.error()));
  Result<ModelConfig> config = Llama2cConfig(llama2c::DecodeHeader(header_bytes));
  if (!config) return Fail(std::move(config.error()));
  Result<uint64_t> expected = Llama2cFileBytes(*config);
  if (!expected) return Fail(std::move(expected.error()));
  if (file->size() < *expected) return Fail(llama2c::Truncated("llama2.c weights", *expected, file->size()));
  if (file->size() > *expected) return Fail(llama2c::TrailingBytes(*expected, file->size()));

  // The file holds every byte the header implies, so every size below is backed
  // by data (and fits, as the byte count did).
  const std::vector<std::string> names = ParameterNames(*config);
  const std::vector<std::vector<size_t>> shapes = ParameterShapes(*config);
  Result<PendingParameters> pending = AllocateParameters(shapes);
  if (!pending) return Fail(std::move(pending.error()));
  std::vector<uint8_t> chunk(std::min<uint64_t>(kChunkFloats, *expected / sizeof(float)) * sizeof(float));
  for (const llama2c::Section& section : llama2c::FileSections(*config)) {
    const std::string& name =
        section.kind == llama2c::SectionKind::kRopeTables ? std::string() : names[section.parameter];
    if (auto read = ReadSection(*file, section, name, chunk, *pending); !read) {
      return Fail(std::move(read.error()));
    }
  }

  std::vector<ParameterPtr> nodes;
  nodes.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    Result<ParameterPtr> node =
        shapes[i].size() == 1
            ? Parameter::Create(names[i], shapes[i], pending->gains[i])
            : Parameter::CreatePanels(names[i], shapes[i],
                                      i == 0 ? ParameterLayout::kTransposedPanelsF32 : ParameterLayout::kPanelsF32,
                                      std::move(pending->panels[i]));
    if (!node) return Fail(std::move(node.error()));
    nodes.push_back(std::move(*node));
  }
  return DecoderModel::FromParameters(*config, std::move(nodes));
}

}  // namespace kvrt
