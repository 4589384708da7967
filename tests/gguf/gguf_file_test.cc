// The metadata and tensor tables of the five fixture files, read as
// fixtures/gguf/README.md §1–2 documents them, and the typed lookups.
#include <gtest/gtest.h>

#include <set>

#include "gguf_test_support.h"

namespace kvrt::gguf::testing {
namespace {

const std::map<std::string, std::pair<uint32_t, GgmlType>> kFileFacts = {
    {"f32", {0, GgmlType::kF32}},   {"f16", {1, GgmlType::kF16}},   {"bf16", {32, GgmlType::kBF16}},
    {"q8_0", {7, GgmlType::kQ8_0}}, {"q4_0", {2, GgmlType::kQ4_0}},
};

class FixtureFile : public ::testing::TestWithParam<FixtureType> {};

TEST_P(FixtureFile, MetadataIsAsDocumented) {
  const std::string type = GetParam().type;
  Result<GgufFile> file = GgufFile::Open(ModelPath(GetParam()));
  ASSERT_TRUE(file) << file.error().Debug();
  EXPECT_EQ(file->version(), 3u);
  EXPECT_EQ(file->alignment(), 32u);
  EXPECT_EQ(file->data_offset(), type == "f32" ? 724992u : 725088u);

  std::vector<std::string> keys;
  for (const MetadataEntry& entry : file->metadata()) keys.emplace_back(entry.key);
  std::vector<std::string> expected = {
      "tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type", "tokenizer.ggml.model",
      "general.architecture", "general.name", "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.bos_token_id",
      "tokenizer.ggml.eos_token_id", "tokenizer.ggml.seperator_token_id", "tokenizer.ggml.padding_token_id",
      "llama.embedding_length", "llama.feed_forward_length", "llama.attention.head_count",
      "llama.attention.head_count_kv", "llama.block_count", "llama.rope.dimension_count",
      "llama.attention.layer_norm_rms_epsilon", "llama.context_length"};
  if (type != "f32") expected.insert(expected.end(), {"general.quantization_version", "general.file_type"});
  // The README lists the eight llama.* keys as a set; compare those as a set.
  ASSERT_EQ(keys.size(), expected.size());
  EXPECT_EQ(std::vector(keys.begin(), keys.begin() + 11), std::vector(expected.begin(), expected.begin() + 11));
  EXPECT_EQ(std::set(keys.begin() + 11, keys.begin() + 19), std::set(expected.begin() + 11, expected.begin() + 19));
  if (type != "f32") {
    EXPECT_EQ(keys[19], "general.quantization_version");
    EXPECT_EQ(*file->Get<uint32_t>("general.quantization_version"), 2u);
    EXPECT_EQ(*file->Get<uint32_t>("general.file_type"), kFileFacts.at(type).first);
  }

  EXPECT_EQ(*file->Get<std::string_view>("general.architecture"), "llama");
  EXPECT_EQ(*file->Get<std::string_view>("general.name"), "llama");
  EXPECT_EQ(*file->Get<std::string_view>("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(*file->Get<uint32_t>("llama.embedding_length"), 64u);
  EXPECT_EQ(*file->Get<uint32_t>("llama.feed_forward_length"), 192u);
  EXPECT_EQ(*file->Get<uint32_t>("llama.block_count"), 2u);
  EXPECT_EQ(*file->Get<uint32_t>("llama.attention.head_count"), 4u);
  EXPECT_EQ(*file->Get<uint32_t>("llama.attention.head_count_kv"), 2u);
  EXPECT_EQ(*file->Get<uint32_t>("llama.rope.dimension_count"), 16u);
  EXPECT_EQ(*file->Get<uint32_t>("llama.context_length"), 128u);
  EXPECT_EQ(*file->Get<float>("llama.attention.layer_norm_rms_epsilon"), 9.99999975e-06f);
  EXPECT_EQ(*file->Get<uint32_t>("tokenizer.ggml.unknown_token_id"), 0u);
  EXPECT_EQ(*file->Get<uint32_t>("tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_EQ(*file->Get<uint32_t>("tokenizer.ggml.eos_token_id"), 2u);
  EXPECT_EQ(*file->Get<uint32_t>("tokenizer.ggml.padding_token_id"), 4294967295u);
  EXPECT_EQ(*file->Get<uint64_t>("tokenizer.ggml.seperator_token_id"), 4294967295u);
  for (const char* absent : {"tokenizer.ggml.pre", "tokenizer.ggml.add_bos_token", "llama.rope.freq_base",
                             "llama.vocab_size", "general.alignment"}) {
    EXPECT_EQ(file->Find(absent), nullptr) << absent;
  }

  Result<std::span<const std::string_view>> tokens = file->GetStringArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens) << tokens.error().Debug();
  ASSERT_EQ(tokens->size(), 32000u);
  EXPECT_EQ((*tokens)[0], "<unk>");
  EXPECT_EQ((*tokens)[1], "<s>");
  EXPECT_EQ((*tokens)[2], "</s>");
  EXPECT_EQ((*tokens)[3], "<0x00>");
  EXPECT_EQ((*tokens)[258], "<0xFF>");
  // The views point into the mapping: the vocabulary is not copied.
  const std::span<const uint8_t> bytes = file->mapping()->bytes();
  EXPECT_GE(reinterpret_cast<const uint8_t*>((*tokens)[100].data()), bytes.data());
  EXPECT_LT(reinterpret_cast<const uint8_t*>((*tokens)[100].data()), bytes.data() + bytes.size());

  Result<ScalarArrayView<float>> scores = file->GetArray<float>("tokenizer.ggml.scores");
  ASSERT_TRUE(scores);
  EXPECT_EQ(scores->size(), 32000u);
  Result<ScalarArrayView<int32_t>> types = file->GetArray<int32_t>("tokenizer.ggml.token_type");
  ASSERT_TRUE(types);
  ASSERT_EQ(types->size(), 32000u);
  EXPECT_EQ((*types)[0], 2);
  EXPECT_EQ((*types)[1], 3);
  EXPECT_EQ((*types)[2], 3);
  for (size_t id = 3; id <= 258; ++id) EXPECT_EQ((*types)[id], 6) << id;
  EXPECT_EQ((*types)[259], 1);
  EXPECT_EQ((*types)[31999], 1);
}

TEST_P(FixtureFile, TensorTableIsAsDocumented) {
  const std::string type = GetParam().type;
  Result<GgufFile> file = GgufFile::Open(ModelPath(GetParam()));
  ASSERT_TRUE(file) << file.error().Debug();
  ASSERT_EQ(file->tensors().size(), 21u);
  const GgmlType matrix_type = kFileFacts.at(type).second;
  auto expect = [&](const std::string& name, std::vector<uint64_t> ne, GgmlType tensor_type) {
    const TensorInfo* tensor = file->FindTensor(name);
    ASSERT_NE(tensor, nullptr) << name;
    EXPECT_EQ(std::vector<uint64_t>(tensor->ne.begin(), tensor->ne.begin() + tensor->n_dims), ne) << name;
    EXPECT_EQ(tensor->type, tensor_type) << name << " is " << GgmlTypeName(tensor->type);
    EXPECT_EQ(tensor->offset % 32, 0u) << name;
  };
  expect("token_embd.weight", {64, 32000}, matrix_type);
  expect("output.weight", {64, 32000}, type == "q4_0" ? GgmlType::kQ8_0 : matrix_type);
  expect("output_norm.weight", {64}, GgmlType::kF32);
  for (int layer = 0; layer < 2; ++layer) {
    const std::string b = "blk." + std::to_string(layer) + ".";
    expect(b + "attn_q.weight", {64, 64}, matrix_type);
    expect(b + "attn_k.weight", {64, 32}, matrix_type);
    expect(b + "attn_v.weight", {64, 32}, matrix_type);
    expect(b + "attn_output.weight", {64, 64}, matrix_type);
    expect(b + "ffn_gate.weight", {64, 192}, matrix_type);
    expect(b + "ffn_up.weight", {64, 192}, matrix_type);
    expect(b + "ffn_down.weight", {192, 64}, matrix_type);
    expect(b + "attn_norm.weight", {64}, GgmlType::kF32);
    expect(b + "ffn_norm.weight", {64}, GgmlType::kF32);
  }
  // File order: the converter's for f32, sorted by name after llama-quantize.
  EXPECT_EQ(file->tensors().front().name, type == "f32" ? "token_embd.weight" : "output.weight");
}

TEST_P(FixtureFile, SummaryAndConfig) {
  Result<GgufFile> file = GgufFile::Open(ModelPath(GetParam()));
  ASSERT_TRUE(file);
  Result<GgufFileSummary> summary = SummarizeGguf(*file);
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->architecture, "llama");
  EXPECT_EQ(summary->name, "llama");
  EXPECT_EQ(summary->version, 3u);
  EXPECT_EQ(summary->tensor_count, 21u);
  EXPECT_EQ(summary->metadata_count, std::string(GetParam().type) == "f32" ? 19u : 21u);
  EXPECT_EQ(summary->context_length, std::optional<uint64_t>(128));
  EXPECT_EQ(summary->tokenizer_model, "llama");
  EXPECT_EQ(summary->tokenizer_pre, "");
  EXPECT_EQ(summary->tensors_per_type.at("F32"), std::string(GetParam().type) == "f32" ? 21u : 5u);
  Result<ModelConfig> config = LlamaConfig(*file);
  ASSERT_TRUE(config) << config.error().Debug();
  EXPECT_EQ(config->vocabulary_size, 32000u);
  EXPECT_EQ(config->model_width, 64u);
  EXPECT_EQ(config->heads, 4u);
  EXPECT_EQ(config->kv_heads, 2u);
  EXPECT_EQ(config->feed_forward_width, 192u);
  EXPECT_EQ(config->layers, 2u);
  EXPECT_EQ(config->max_positions, 128u);
  EXPECT_EQ(config->rope_base, 10000.0);
  EXPECT_EQ(config->rms_epsilon, static_cast<double>(9.99999975e-06f));
  EXPECT_FALSE(config->tied_output);  // the converter always writes output.weight
}

INSTANTIATE_TEST_SUITE_P(Types, FixtureFile, ::testing::ValuesIn(kFixtureTypes),
                         [](const auto& test_param) { return std::string(test_param.param.type); });

TEST(GgufLookups, TypedErrorsNameTheKey) {
  Result<GgufFile> file = GgufFile::Open(FixturePath("tiny-f32.gguf"));
  ASSERT_TRUE(file);
  Result<uint32_t> missing = file->Get<uint32_t>("llama.nothing");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kMissingKey);
  EXPECT_NE(missing.error().message().find("llama.nothing"), std::string::npos);
  Result<uint32_t> wrong = file->Get<uint32_t>("general.name");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code(), ErrorCode::kKeyTypeMismatch);
  EXPECT_NE(wrong.error().message().find("general.name"), std::string::npos);
  // Integers convert whenever the value fits, as llama.cpp does for u32 keys.
  EXPECT_EQ(*file->Get<int64_t>("llama.block_count"), 2);
  EXPECT_EQ(*file->Get<uint8_t>("llama.block_count"), 2u);
  Result<uint16_t> too_big = file->Get<uint16_t>("tokenizer.ggml.padding_token_id");
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().code(), ErrorCode::kKeyValueOutOfRange);
  EXPECT_EQ(*file->Get<double>("llama.attention.layer_norm_rms_epsilon"), static_cast<double>(9.99999975e-06f));
  Result<std::optional<float>> absent = file->GetOptional<float>("llama.rope.freq_base");
  ASSERT_TRUE(absent);
  EXPECT_FALSE(*absent);
  Result<ScalarArrayView<float>> not_floats = file->GetArray<float>("tokenizer.ggml.token_type");
  ASSERT_FALSE(not_floats);
  EXPECT_EQ(not_floats.error().code(), ErrorCode::kKeyTypeMismatch);
}

}  // namespace
}  // namespace kvrt::gguf::testing

namespace kvrt::gguf::testing {
namespace {

TEST(GgufMapping, TensorBytesOutliveTheFileObject) {
  std::shared_ptr<const FileMapping> mapping;
  std::span<const uint8_t> norm;
  {
    Result<GgufFile> file = GgufFile::Open(FixturePath("tiny-f32.gguf"));
    ASSERT_TRUE(file);
    mapping = file->mapping();
    norm = file->FindTensor("output_norm.weight")->data;
  }
  // The mapping is shared: the bytes stay mapped while anyone holds it.
  std::vector<float> values(64);
  Dequantize(GgmlType::kF32, norm, values);
  for (float v : values) EXPECT_EQ(v, 1.0f);
  EXPECT_EQ(mapping.use_count(), 1);
}

}  // namespace
}  // namespace kvrt::gguf::testing
