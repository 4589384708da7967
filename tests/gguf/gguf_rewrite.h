// Small llama GGUF images for the hostile-input and metadata tests: a valid model
// written by SaveGgufModel, rewritten with keys or tensors dropped or added.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_llama.h"
#include "formats/gguf/gguf_writer.h"
#include "kvrt/rng.h"

namespace kvrt::gguf::testing {

inline Result<GgufFile> ParseBytes(std::vector<uint8_t> bytes) {
  Result<std::shared_ptr<const FileMapping>> mapping = FileMapping::FromBytes(std::move(bytes));
  if (!mapping) return Fail(std::move(mapping.error()));
  return GgufFile::Parse(std::move(*mapping));
}

// A small llama model written by SaveGgufModel, with a tokenizer.
inline std::vector<uint8_t> SmallModelFile(GgmlType type) {
  ModelConfig config = ModelConfig::Create(40, 32, 4, 64, 2, 16, 10000.0, 1.0 / 65536);
  config.kv_heads = 2;
  config.tied_output = false;
  SplitMix64 rng(7);
  DecoderModel model = *DecoderModel::FromSeed(config, rng);
  GgufTokenizerMetadata tokenizer;
  for (int i = 0; i < 40; ++i) tokenizer.tokens.push_back("t" + std::to_string(i));
  tokenizer.scores.assign(40, -1.0f);
  tokenizer.token_types.assign(40, 1);
  const std::string path = ::testing::TempDir() + "/kvrt-small-" + std::to_string(::getpid()) + ".gguf";
  EXPECT_TRUE(SaveGgufModel(model, type, path, tokenizer));
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  return bytes;
}

// Copies `file` through a GgufWriter: `keep_key` may drop entries, `extra`
// appends keys and tensors, `keep_tensor` may drop tensors. The source holds
// only u32, f32, string and array keys (what SaveGgufModel writes).
inline std::vector<uint8_t> Rewrite(const GgufFile& file, const std::function<bool(std::string_view)>& keep_key,
                             const std::function<void(GgufWriter&)>& extra,
                             const std::function<bool(std::string_view)>& keep_tensor = nullptr) {
  GgufWriter writer;
  for (const MetadataEntry& entry : file.metadata()) {
    if (!keep_key(entry.key)) continue;
    const Value& v = entry.value;
    switch (v.type) {
      case ValueType::kU32: writer.AddU32(entry.key, static_cast<uint32_t>(v.bits)); break;
      case ValueType::kF32: writer.AddF32(entry.key, std::bit_cast<float>(static_cast<uint32_t>(v.bits))); break;
      case ValueType::kString: writer.AddString(entry.key, v.string); break;
      default: {
        if (v.element_type == ValueType::kString) {
          std::vector<std::string> strings(v.strings.begin(), v.strings.end());
          writer.AddStringArray(entry.key, strings);
        }
      }
    }
  }
  extra(writer);
  for (const TensorInfo& tensor : file.tensors()) {
    if (keep_tensor && !keep_tensor(tensor.name)) continue;
    std::vector<float> values(tensor.elements);
    Dequantize(tensor.type, tensor.data, values);
    EXPECT_TRUE(writer.AddTensor(tensor.name, std::span(tensor.ne).first(tensor.n_dims), tensor.type, values));
  }
  return *writer.Serialize();
}

// The error of building the model of `bytes`, which must mention `must_mention`.
inline ErrorCode ModelError(const std::vector<uint8_t>& bytes, const std::string& must_mention) {
  Result<GgufFile> file = ParseBytes(bytes);
  EXPECT_TRUE(file) << file.error().Debug();
  if (!file) return ErrorCode::kCount;
  Result<DecoderModel> model = BuildLlamaModel(*file, ModelStorage::kPanelsF32);
  EXPECT_FALSE(model);
  if (model) return ErrorCode::kCount;
  EXPECT_NE(model.error().message().find(must_mention), std::string::npos) << model.error().message();
  return model.error().code();
}

}  // namespace kvrt::gguf::testing
