#include "inspect_json.h"

#include <cstdio>
#include <vector>

#include "build_facts.h"
#include "json_writer.h"
#include "output.h"

namespace kvrt::cli {

void WriteConfigJson(JsonWriter& json, const ModelConfig& m) {
  json.Key("config").BeginObject();
  json.Key("vocabulary_size").Unsigned(m.vocabulary_size);
  json.Key("model_width").Unsigned(m.model_width);
  json.Key("heads").Unsigned(m.heads);
  json.Key("kv_heads").Unsigned(m.kv_heads);
  json.Key("feed_forward_width").Unsigned(m.feed_forward_width);
  json.Key("layers").Unsigned(m.layers);
  json.Key("max_positions").Unsigned(m.max_positions);
  json.Key("rope_base").Number(m.rope_base);
  json.Key("rms_epsilon").Number(m.rms_epsilon);
  json.Key("tied_output").Bool(m.tied_output);
  json.EndObject();
}

void PrintLlama2cJson(const std::string& path, const LoadedModel& loaded) {
  const ModelConfig& m = loaded.model.config();
  JsonWriter json;
  json.BeginObject();
  WriteBuildFacts(json, CurrentBuildFacts());
  json.Key("file").String(path);
  json.Key("format").String(ModelFormatName(loaded.format));
  json.Key("file_bytes").Unsigned(loaded.file_bytes);
  WriteConfigJson(json, m);
  json.Key("parameter_scalars").Unsigned(loaded.model.parameter_count());
  json.Key("parameters").BeginArray();
  for (const ModelTensor& tensor : loaded.model.tensors()) {
    const std::vector<uint64_t> shape(tensor.shape.begin(), tensor.shape.end());
    json.BeginObject();
    json.Key("name").String(tensor.name);
    json.Key("shape").UnsignedArray(std::span<const uint64_t>(shape));
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  PrintStdout("%s\n", json.text().c_str());
}

}  // namespace kvrt::cli
