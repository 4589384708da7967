#include "inspect_weights.h"

#include <cmath>
#include <cstdio>
#include <vector>

#include "build_facts.h"
#include "common.h"
#include "json_writer.h"
#include "kvrt/load_model.h"
#include "output.h"

namespace kvrt::cli {

int PrintWeightPlan(const std::string& path, WeightFormat format, bool json_output) {
  Result<LoadedModel> loaded = LoadModel(path);
  if (!loaded) return ReportError(loaded.error());
  const std::vector<MatrixWeightFormat> plan = loaded->model.WeightPlan(format);
  double bytes = 0.0;  // of the matrices' values, block scales included (no panel padding)
  size_t fallbacks = 0;
  for (const MatrixWeightFormat& matrix : plan) {
    bytes += WeightFormatBytesPerWeight(matrix.effective) * static_cast<double>(matrix.rows * matrix.cols);
    fallbacks += matrix.fallback;
  }
  const bool mix = IsWeightMix(format);
  const std::string requested(WeightFormatName(format));
  if (json_output) {
    JsonWriter json;
    json.BeginObject();
    WriteBuildFacts(json, CurrentBuildFacts());
    json.Key("file").String(path);
    json.Key("weights").BeginObject();
    json.Key("requested").String(requested);
    json.Key("matrix_bytes").Unsigned(static_cast<uint64_t>(std::llround(bytes)));
    json.Key("fallbacks").Unsigned(fallbacks);
    json.Key("matrices").BeginArray();
    for (const MatrixWeightFormat& matrix : plan) {
      json.BeginObject();
      json.Key("name").String(matrix.name);
      json.Key("rows").Unsigned(matrix.rows);
      json.Key("cols").Unsigned(matrix.cols);
      json.Key("type").String(WeightFormatName(matrix.effective));
      json.Key("as_stored").Bool(matrix.as_stored);
      json.Key("fallback").Bool(matrix.fallback);
      if (matrix.fallback) json.Key("wanted").String(WeightFormatName(matrix.wanted));
      // A mix's every matrix: the type llama-quantize gives it.
      if (mix) json.Key("llama_quantize_type").String(matrix.mix_type);
      json.EndObject();
    }
    json.EndArray();
    json.EndObject();
    json.EndObject();
    PrintStdout("%s\n", json.text().c_str());
    return 0;
  }
  PrintStdout("file: %s\nweights: %s (%zu matrices, %.0f bytes, %zu fallbacks)\n", path.c_str(),
              requested.c_str(), plan.size(), bytes, fallbacks);
  for (const MatrixWeightFormat& matrix : plan) {
    PrintStdout("  %-40s [%zu, %zu] %-5s%s", matrix.name.c_str(), matrix.rows, matrix.cols,
                std::string(WeightFormatName(matrix.effective)).c_str(), matrix.as_stored ? " (as stored)" : "");
    if (matrix.fallback) {
      PrintStdout(" (fallback from %s: K = %zu is not a multiple of %zu)",
                  std::string(WeightFormatName(matrix.wanted)).c_str(), matrix.rows,
                  WeightFormatRowMultiple(matrix.wanted));
    }
    PrintStdout("\n");
  }
  return 0;
}

}  // namespace kvrt::cli
