// kvrt inspect PATH: what a model file holds (an LLMCP35 checkpoint without building a model).
#include <cstdio>
#include <string>

#include "commands.h"
#include "common.h"
#include "build_facts.h"
#include "inspect_json.h"
#include "inspect_weights.h"
#include "json_writer.h"
#include "kvrt/load_model.h"
#include "kvrt/model_file.h"
#include "output.h"

namespace kvrt::cli {
namespace {

constexpr FlagSpec kFlags[] = {
    {"json", false, "print one JSON object instead of text"},
    {"weights", true,
     "list the format the fast engine keeps each weight matrix in for as-stored, f32, bf16, f16, q8_0, "
     "q4_0, q5_0, q4_1, q5_1, iq4_nl, iq4_xs, q2_k, q3_k, q4_k, q5_k or q6_k, or a mix q3_k_m ... q5_k_m (fallbacks marked) "
     "instead of the file summary"},
    {"help", false, "show this help"},
};

std::string ShapeText(const std::vector<uint64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string Hex16(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

void PrintText(const std::string& path, const CheckpointFileSummary& c) {
  const ModelConfig& m = c.config;
  PrintStdout("file: %s\n", path.c_str());
  PrintStdout("bytes: %llu (header %llu, payload %llu)\n", static_cast<unsigned long long>(c.file_bytes),
              static_cast<unsigned long long>(c.header_bytes),
              static_cast<unsigned long long>(c.payload_bytes));
  PrintStdout("checksum: fnv1a64:%s\n", Hex16(c.checksum).c_str());
  PrintStdout(
      "config: vocabulary_size=%zu model_width=%zu heads=%zu feed_forward_width=%zu layers=%zu "
      "max_positions=%zu rope_base=%s rms_epsilon=%s\n",
      m.vocabulary_size, m.model_width, m.heads, m.feed_forward_width, m.layers, m.max_positions,
      Float17(m.rope_base).c_str(), Float17(m.rms_epsilon).c_str());
  PrintStdout("parameters: %llu tensors, %llu scalars\n", static_cast<unsigned long long>(c.parameter_tensors),
              static_cast<unsigned long long>(c.parameter_scalars));
  PrintStdout("tokenizer: %s, vocabulary %zu", std::string(c.tokenizer.kind_name()).c_str(),
              c.tokenizer.vocabulary_size());
  if (c.tokenizer.kind() == TokenizerKind::kByteBpe) {
    PrintStdout(" (%zu merges, BOS 0, EOS 1)", c.tokenizer.merges().size());
  }
  PrintStdout("\nselected_step: %llu\n", static_cast<unsigned long long>(c.selected_step));
  PrintStdout("sampling_rng_state: 0x%s\n", Hex16(c.sampling_rng_state).c_str());
  const CheckpointFileSummary::Optimizer& o = c.optimizer;
  PrintStdout(
      "optimizer: AdamW lr=%s beta1=%s beta2=%s epsilon=%s weight_decay=%s step=%llu groups=%s "
      "moments=%zu\n",
      Float17(o.learning_rate).c_str(), Float17(o.beta1).c_str(), Float17(o.beta2).c_str(),
      Float17(o.epsilon).c_str(), Float17(o.weight_decay).c_str(), static_cast<unsigned long long>(o.step),
      o.has_groups ? "yes" : "no", o.moments);
  PrintStdout("tensors: %zu\n", c.tensors.size());
  for (const FileTensor& d : c.tensors) {
    PrintStdout("  %-22s %-40s %-4s %-14s offset %llu, %llu bytes\n", d.role.c_str(), d.name.c_str(),
                d.type.c_str(), ShapeText(d.shape).c_str(), static_cast<unsigned long long>(d.offset),
                static_cast<unsigned long long>(d.bytes));
  }
}

void PrintJson(const std::string& path, const CheckpointFileSummary& c) {
  const ModelConfig& m = c.config;
  JsonWriter json;
  json.BeginObject();
  WriteBuildFacts(json, CurrentBuildFacts());
  json.Key("file").String(path);
  json.Key("file_bytes").Unsigned(c.file_bytes);
  json.Key("header_bytes").Unsigned(c.header_bytes);
  json.Key("payload_bytes").Unsigned(c.payload_bytes);
  json.Key("checksum").String("fnv1a64:" + Hex16(c.checksum));
  json.Key("config").BeginObject();
  json.Key("vocabulary_size").Unsigned(m.vocabulary_size);
  json.Key("model_width").Unsigned(m.model_width);
  json.Key("heads").Unsigned(m.heads);
  json.Key("feed_forward_width").Unsigned(m.feed_forward_width);
  json.Key("layers").Unsigned(m.layers);
  json.Key("max_positions").Unsigned(m.max_positions);
  json.Key("rope_base").Number(m.rope_base);
  json.Key("rms_epsilon").Number(m.rms_epsilon);
  json.EndObject();
  json.Key("parameter_scalars").Unsigned(c.parameter_scalars);
  json.Key("tokenizer").BeginObject();
  json.Key("kind").String(c.tokenizer.kind_name());
  json.Key("vocabulary_size").Unsigned(c.tokenizer.vocabulary_size());
  json.EndObject();
  json.Key("selected_step").Unsigned(c.selected_step);
  json.Key("sampling_rng_state").String(Hex16(c.sampling_rng_state));
  json.Key("tensors").BeginArray();
  for (const FileTensor& d : c.tensors) {
    json.BeginObject();
    json.Key("role").String(d.role);
    json.Key("name").String(d.name);
    json.Key("dtype").String(d.type);
    json.Key("shape").UnsignedArray(std::span<const uint64_t>(d.shape));
    json.Key("offset").Unsigned(d.offset);
    json.Key("byte_len").Unsigned(d.bytes);
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  PrintStdout("%s\n", json.text().c_str());
}

// A llama2.c model.bin holds no tokenizer, step or RNG state: its config and
// parameters are what there is to show.
void PrintLlama2c(const std::string& path, const Model& model) {
  const ModelConfig& m = model.config();
  PrintStdout("file: %s\nformat: llama2c (f32 weights)\n", path.c_str());
  PrintStdout(
      "config: vocabulary_size=%zu model_width=%zu heads=%zu kv_heads=%zu feed_forward_width=%zu layers=%zu "
      "max_positions=%zu rope_base=%s rms_epsilon=%s output_head=%s\n",
      m.vocabulary_size, m.model_width, m.heads, m.kv_heads, m.feed_forward_width, m.layers, m.max_positions,
      Float17(m.rope_base).c_str(), Float17(m.rms_epsilon).c_str(), m.tied_output ? "tied" : "untied");
  const std::vector<ModelTensor> tensors = model.tensors();
  PrintStdout("parameters: %zu tensors, %zu scalars\n", tensors.size(), model.parameter_count());
  for (const ModelTensor& tensor : tensors) {
    std::vector<uint64_t> shape(tensor.shape.begin(), tensor.shape.end());
    PrintStdout("  %-40s %-14s %s\n", tensor.name.c_str(), ShapeText(shape).c_str(), tensor.storage.c_str());
  }
}

// A GGUF: architecture, shapes, tensor types and counts, tokenizer and context.
// The model is built too, so a file inspect accepts is one generate runs.
int PrintGguf(const std::string& path, bool json_output) {
  Result<GgufFileSummary> summary = SummarizeGgufFile(path);
  if (!summary) return ReportError(summary.error());
  Result<LoadedModel> loaded = LoadModel(path);
  // A vocabulary-only file (no tensors) has a tokenizer and no model.
  const bool vocabulary_only = summary->tensor_count == 0;
  if (!loaded && !vocabulary_only) return ReportError(loaded.error());
  Result<Tokenizer> tokenizer = vocabulary_only ? LoadTokenizer(path) : Result<Tokenizer>(Tokenizer());
  if (!tokenizer) return ReportError(tokenizer.error());
  const Tokenizer* vocabulary = vocabulary_only ? &*tokenizer
                                : (loaded->tokenizer ? &*loaded->tokenizer : nullptr);
  const GgufFileSummary& g = *summary;
  if (json_output) {
    JsonWriter json;
    json.BeginObject();
    WriteBuildFacts(json, CurrentBuildFacts());
    json.Key("file").String(path);
    json.Key("format").String("gguf");
    json.Key("version").Unsigned(g.version);
    json.Key("architecture").String(g.architecture);
    json.Key("name").String(g.name);
    json.Key("metadata_keys").Unsigned(g.metadata_count);
    json.Key("alignment").Unsigned(g.alignment);
    json.Key("data_offset").Unsigned(g.data_offset);
    if (g.context_length) json.Key("context_length").Unsigned(*g.context_length);
    if (!vocabulary_only) {
      WriteConfigJson(json, loaded->model.config());
    }
    json.Key("tokenizer").BeginObject();
    json.Key("model").String(g.tokenizer_model);
    json.Key("pre").String(g.tokenizer_pre);
    json.Key("kind").String(vocabulary ? vocabulary->kind_name() : "none");
    json.Key("tokens").Unsigned(vocabulary ? vocabulary->vocabulary_size() : 0);
    json.EndObject();
    json.Key("tensor_count").Unsigned(g.tensor_count);
    json.Key("tensors_per_type").BeginObject();
    for (const auto& [type, count] : g.tensors_per_type) json.Key(type).Unsigned(count);
    json.EndObject();
    json.Key("tensors").BeginArray();
    for (const FileTensor& t : g.tensors) {
      json.BeginObject();
      json.Key("name").String(t.name);
      json.Key("type").String(t.type);
      json.Key("shape").UnsignedArray(std::span<const uint64_t>(t.shape));
      json.EndObject();
    }
    json.EndArray();
    json.EndObject();
    PrintStdout("%s\n", json.text().c_str());
    return 0;
  }
  PrintStdout("file: %s\nformat: gguf v%u (alignment %u, data at byte %llu, %llu metadata keys)\n", path.c_str(),
              g.version, g.alignment, static_cast<unsigned long long>(g.data_offset),
              static_cast<unsigned long long>(g.metadata_count));
  PrintStdout("architecture: %s%s%s\n", g.architecture.empty() ? "(none)" : g.architecture.c_str(),
              g.name.empty() ? "" : "  name: ", g.name.c_str());
  if (g.context_length) PrintStdout("context_length: %llu\n", static_cast<unsigned long long>(*g.context_length));
  if (!vocabulary_only) {
    const ModelConfig& m = loaded->model.config();
    PrintStdout(
        "config: vocabulary_size=%zu model_width=%zu heads=%zu kv_heads=%zu feed_forward_width=%zu layers=%zu "
        "max_positions=%zu rope_base=%s rms_epsilon=%s output_head=%s\n",
        m.vocabulary_size, m.model_width, m.heads, m.kv_heads, m.feed_forward_width, m.layers, m.max_positions,
        Float17(m.rope_base).c_str(), Float17(m.rms_epsilon).c_str(), m.tied_output ? "tied" : "untied");
  }
  PrintStdout("tokenizer: %s%s%s (%s, %zu tokens)\n", g.tokenizer_model.empty() ? "none" : g.tokenizer_model.c_str(),
              g.tokenizer_pre.empty() ? "" : ", pre ", g.tokenizer_pre.c_str(),
              vocabulary ? std::string(vocabulary->kind_name()).c_str() : "none",
              vocabulary ? vocabulary->vocabulary_size() : size_t{0});
  std::string types;
  for (const auto& [type, count] : g.tensors_per_type) types += " " + type + "=" + std::to_string(count);
  PrintStdout("tensors: %llu (%s )\n", static_cast<unsigned long long>(g.tensor_count), types.c_str());
  for (const FileTensor& t : g.tensors) {
    PrintStdout("  %-40s %-6s %s\n", t.name.c_str(), t.type.c_str(), ShapeText(t.shape).c_str());
  }
  return 0;
}

}  // namespace

int RunInspect(std::span<char* const> args) {
  Result<Flags> flags = Flags::Parse(args, kFlags, /*max_positional=*/1);
  if (!flags) return ReportError(flags.error());
  if (flags->Has("help")) {
    PrintStdout("%s", Usage("kvrt inspect PATH [--json] [--weights FORMAT]   (LLMCP35 checkpoint, GGUF or llama2.c model.bin)", kFlags).c_str());
    return 0;
  }
  if (flags->positional().size() != 1) {
    return ReportError(InvalidArgument("kvrt inspect takes exactly one model file path"));
  }
  const std::string& path = flags->positional()[0];
  if (std::optional<std::string> weights = flags->Value("weights")) {
    const std::optional<WeightFormat> requested = ParseWeightFormat(*weights);
    if (!requested) {
      return ReportError(
          InvalidArgument(std::string("--weights must be ") + kWeightFormatChoices + ", got '" + *weights + "'"));
    }
    return PrintWeightPlan(path, *requested, flags->Has("json"));
  }
  Result<ModelFormat> format = DetectModelFormat(path);
  if (!format) return ReportError(format.error());
  if (*format == ModelFormat::kGguf) return PrintGguf(path, flags->Has("json"));
  if (*format == ModelFormat::kLlama2c) {
    Result<LoadedModel> loaded = LoadModel(path);
    if (!loaded) return ReportError(loaded.error());
    if (flags->Has("json")) {
      PrintLlama2cJson(path, *loaded);
    } else {
      PrintLlama2c(path, loaded->model);
    }
    return 0;
  }
  Result<CheckpointFileSummary> checkpoint = SummarizeCheckpointFile(path);
  if (!checkpoint) return ReportError(checkpoint.error());
  if (flags->Has("json")) {
    PrintJson(path, *checkpoint);
  } else {
    PrintText(path, *checkpoint);
  }
  return 0;
}

}  // namespace kvrt::cli
