// GGUF files (formats/gguf) on arbitrary bytes. Parsing returns a typed error or
// a file whose tables are consistent: every tensor lies inside the mapping, every
// lookup and array decode succeeds or fails typed, the summary builds. A file
// that is also a llama model kvrt can run loads into both storages with equal
// values, saves as F32 and loads back bit-identical, and runs one fast-f32
// prefill.
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_llama.h"
#include "formats/gguf/gguf_tokenizer.h"
#include "formats/gguf/gguf_writer.h"
#include "fuzz_check.h"
#include "kv/decoder_kv_cache.h"
#include "session/decoder_kv_session.h"

namespace kvrt::fuzz {
namespace {

using gguf::GgufFile;

// RoPE tables and the model grow with these; the fuzzer's inputs are small, so a
// large context or width only means a slow run, never a finding.
constexpr size_t kMaxRopeEntries = size_t{1} << 16;
constexpr size_t kMaxModelElements = size_t{1} << 22;

std::vector<double> Values(const Parameter& parameter) {
  std::vector<double> values(parameter.element_count());
  parameter.ReadValues(values);
  return values;
}

void CheckTables(const GgufFile& file) {
  const std::span<const uint8_t> bytes = file.mapping()->bytes();
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    KVRT_FUZZ_CHECK(tensor.data.data() >= bytes.data() &&
                        tensor.data.data() + tensor.data.size() <= bytes.data() + bytes.size(),
                    "tensor outside the mapping: " + std::string(tensor.name));
    KVRT_FUZZ_CHECK(tensor.data.size() == tensor.bytes, "tensor size");
    KVRT_FUZZ_CHECK(file.FindTensor(tensor.name) == &tensor, "tensor lookup");
  }
  for (const gguf::MetadataEntry& entry : file.metadata()) {
    KVRT_FUZZ_CHECK(file.Find(entry.key) == &entry.value, "key lookup");
    auto typed = [](const auto& result) {
      if (!result) CheckTypedError(result.error());
    };
    typed(file.Get<uint32_t>(entry.key));
    typed(file.Get<int64_t>(entry.key));
    typed(file.Get<double>(entry.key));
    typed(file.Get<bool>(entry.key));
    typed(file.Get<std::string_view>(entry.key));
    typed(file.GetStringArray(entry.key));
    typed(file.GetArray<float>(entry.key));
    if (entry.value.type == gguf::ValueType::kArray) {
      Result<std::vector<gguf::Value>> elements = file.ArrayElements(entry.value);
      KVRT_FUZZ_CHECK(elements && elements->size() == entry.value.count, Describe(elements));
    }
  }
  // The tokenizer metadata: a typed error, or a tokenizer that encodes and decodes.
  Result<std::optional<Tokenizer>> tokenizer = gguf::ReadTokenizer(file);
  if (!tokenizer) {
    CheckTypedError(tokenizer.error());
  } else if (*tokenizer) {
    Result<std::vector<uint32_t>> ids = (*tokenizer)->EncodeContent("kvrt fuzz: Grüße, 世界 </s>");
    if (!ids) {
      CheckTypedError(ids.error());
    } else if (Result<std::string> text = (*tokenizer)->DecodeContent(*ids); !text) {
      CheckTypedError(text.error());
    }
  }
  Result<GgufFileSummary> summary = gguf::SummarizeGguf(file);
  KVRT_FUZZ_CHECK(summary && summary->tensors.size() == file.tensors().size(), Describe(summary));
}

void CheckModel(const GgufFile& file) {
  Result<ModelConfig> config = gguf::LlamaConfig(file);
  if (!config) return CheckTypedError(config.error());
  if (config->max_positions * (config->head_width() / 2) > kMaxRopeEntries) return;
  if (file.tensors().size() > 64) return;
  size_t elements = 0;
  for (const gguf::TensorInfo& tensor : file.tensors()) elements += tensor.elements;
  if (elements > kMaxModelElements) return;

  Result<DecoderModel> panels = gguf::BuildLlamaModel(file, ModelStorage::kPanelsF32);
  if (!panels) return CheckTypedError(panels.error());
  Result<DecoderModel> dense = gguf::BuildLlamaModel(file, ModelStorage::kDenseF64);
  KVRT_FUZZ_CHECK(dense, Describe(dense));
  for (size_t i = 0; i < dense->parameters().size(); ++i) {
    const std::vector<double> a = Values(dense->parameter(i)), b = Values(panels->parameter(i));
    KVRT_FUZZ_CHECK(a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 8) == 0,
                    "storages disagree: " + dense->parameter(i).name());
  }
  // Every loaded value is an f32, so an F32 file holds the model exactly.
  const std::string path = "/dev/shm/kvrt-fuzz-" + std::to_string(::getpid()) + "-model.gguf";
  Result<void> saved = gguf::SaveGgufModel(*dense, gguf::GgmlType::kF32, path);
  KVRT_FUZZ_CHECK(saved, Describe(saved));
  Result<DecoderModel> copy = gguf::LoadGgufModel(path, ModelStorage::kDenseF64);
  ::unlink(path.c_str());
  KVRT_FUZZ_CHECK(copy, Describe(copy));
  KVRT_FUZZ_CHECK(copy->config().SameAs(dense->config()), "config changed by save and load");
  for (size_t i = 0; i < dense->parameters().size(); ++i) {
    const std::vector<double> a = Values(dense->parameter(i)), b = Values(copy->parameter(i));
    KVRT_FUZZ_CHECK(a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 8) == 0,
                    "weights changed by save and load: " + dense->parameter(i).name());
  }

  CacheOptions options;
  options.precision = Precision::kF32;
  options.capacity = 1;
  Result<DecoderKvCache> cache = DecoderKvCache::Create(*panels, options);
  if (!cache) return CheckTypedError(cache.error());
  Result<DecoderKvSession> session = Bind(*cache, *panels, EngineOptions{Backend::kFast, Precision::kF32, 0, nullptr});
  KVRT_FUZZ_CHECK(session, Describe(session));
  const uint32_t prompt[] = {0};
  Result<StepOutput> step = session->Prefill(prompt);
  if (!step) CheckTypedError(step.error());
}

}  // namespace
}  // namespace kvrt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvrt::Result<std::shared_ptr<const kvrt::gguf::FileMapping>> mapping =
      kvrt::gguf::FileMapping::FromBytes(std::vector<uint8_t>(data, data + size));
  KVRT_FUZZ_CHECK(mapping, kvrt::fuzz::Describe(mapping));
  kvrt::Result<kvrt::gguf::GgufFile> file = kvrt::gguf::GgufFile::Parse(std::move(*mapping));
  if (!file) {
    kvrt::fuzz::CheckTypedError(file.error());
    return 0;
  }
  kvrt::fuzz::CheckTables(*file);
  kvrt::fuzz::CheckModel(*file);
  return 0;
}
