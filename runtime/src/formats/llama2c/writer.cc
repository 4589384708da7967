// SaveLlama2cModel: the header, then every section in file order, converted to
// float32 through a bounded buffer from whatever layout the model keeps (dense
// f64 or f32 panels), so writing never holds a second copy of the weights.
#include <bit>
#include <cmath>
#include <vector>

#include "model/parameter_access.h"
#include "formats/byte_order.h"
#include "formats/llama2c/file_io.h"
#include "formats/llama2c/layout.h"
#include "formats/llama2c/llama2c.h"
#include "model/parameter.h"
#include "model/panel_layout.h"

namespace kvrt {
namespace {

constexpr size_t kChunkBytes = size_t{4} << 20;

// Element (i, j) of a 2-D parameter of shape [a, b], in any layout.
double LogicalElement(const Parameter& parameter, size_t i, size_t j) {
  const size_t a = parameter.shape()[0], b = parameter.shape()[1];
  switch (parameter.layout()) {
    case ParameterLayout::kDenseF64:
      return parameter.values()[i * b + j];
    case ParameterLayout::kPanelsF32:
      return parameter.panels()[detail::PanelOffset<float>(i, j, a)];
    case ParameterLayout::kTransposedPanelsF32:  // the [b, a] matrix's (j, i)
      return parameter.panels()[detail::PanelOffset<float>(j, i, b)];
  }
  return 0.0;
}

// llama2.c's freq_cis tables for position r (cosines, then sines): unused by
// run.c since it computes RoPE itself, written for older readers that load them.
float RopeTableValue(const ModelConfig& config, size_t row, size_t column) {
  const size_t positions = config.max_positions;
  const double head_width = static_cast<double>(config.head_width());
  const double frequency = 1.0 / std::pow(config.rope_base, (2.0 * static_cast<double>(column)) / head_width);
  const double angle = static_cast<double>(row % positions) * frequency;
  return static_cast<float>(row < positions ? std::cos(angle) : std::sin(angle));
}

class ChunkedWriter {
 public:
  explicit ChunkedWriter(llama2c::OutputFile& file) : file_(file) { bytes_.reserve(kChunkBytes); }
  Result<void> Append(float value) {
    llmcp35::AppendLittleEndian(bytes_, std::bit_cast<uint32_t>(value));
    return bytes_.size() >= kChunkBytes ? Flush() : Result<void>{};
  }
  Result<void> Flush() {
    Result<void> written = file_.Write(bytes_);
    bytes_.clear();
    return written;
  }

 private:
  llama2c::OutputFile& file_;
  std::vector<uint8_t> bytes_;
};

Result<void> WriteSection(ChunkedWriter& out, const DecoderModel& model, const llama2c::Section& section) {
  const ModelConfig& config = model.config();
  for (size_t row = 0; row < section.rows; ++row) {
    for (size_t column = 0; column < section.columns; ++column) {
      float value = 0.0f;
      if (section.kind == llama2c::SectionKind::kRopeTables) {
        value = RopeTableValue(config, row, column);
      } else {
        const Parameter& parameter = model.parameter(section.parameter);
        if (section.kind == llama2c::SectionKind::kGain) {
          value = static_cast<float>(parameter.values()[column]);  // gains are dense (checked)
        } else {
          value = static_cast<float>(section.transposed ? LogicalElement(parameter, column, row)
                                                        : LogicalElement(parameter, row, column));
        }
      }
      if (auto appended = out.Append(value); !appended) return appended;
    }
  }
  return {};
}

}  // namespace

Result<void> SaveLlama2cModel(const DecoderModel& model, const std::string& path) {
  Result<Llama2cHeader> header = Llama2cHeaderOf(model.config());
  if (!header) return Fail(std::move(header.error()));
  if (auto size = Llama2cFileBytes(model.config()); !size) return Fail(std::move(size.error()));
  for (const ParameterPtr& parameter : model.parameters()) {
    if (parameter->shape().size() == 1 && !parameter->is_dense()) {
      return Fail(ErrorCode::kInvariantViolation, {}, "a gain vector must be dense");
    }
  }
  SharedBorrows reading(model.parameters());  // no update may change values mid-file
  Result<llama2c::OutputFile> file = llama2c::OutputFile::Create(path);
  if (!file) return Fail(std::move(file.error()));
  const std::array<uint8_t, kLlama2cHeaderBytes> header_bytes = llama2c::EncodeHeader(*header);
  if (auto written = file->Write(header_bytes); !written) return written;
  ChunkedWriter out(*file);
  for (const llama2c::Section& section : llama2c::FileSections(model.config())) {
    if (auto written = WriteSection(out, model, section); !written) return written;
  }
  if (auto flushed = out.Flush(); !flushed) return flushed;
  return file->Commit();
}

}  // namespace kvrt
