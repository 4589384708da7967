// SaveGgufModel then LoadGgufModel: a seeded model whose values are f32 comes
// back with bit-identical logits; quantized saves come back as their own
// dequantized values.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "formats/gguf/gguf_writer.h"
#include "gguf_test_support.h"
#include "kvrt/rng.h"

namespace kvrt::gguf::testing {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/kvrt-gguf-" + std::to_string(::getpid()) + "-" + name;
}

// A seeded dense model whose every value is an f32 (the seed drawn into f32
// panels, then read back densely), so an F32 GGUF file holds it exactly. The
// epsilon and RoPE base are f32 values too: GGUF keeps both as float32.
DecoderModel F32ExactModel(bool tied, size_t kv_heads) {
  ModelConfig config = ModelConfig::Create(96, 32, 4, 48, 2, 24, 10000.0, static_cast<double>(1e-5f));
  config.kv_heads = kv_heads;
  config.tied_output = tied;
  SplitMix64 rng(11);
  DecoderModel panels = *DecoderModel::FromSeed(config, rng, ModelStorage::kPanelsF32);
  std::vector<NamedTensor> tensors;
  for (const ParameterPtr& parameter : panels.parameters()) {
    NamedTensor tensor{parameter->name(), parameter->shape(), std::vector<double>(parameter->element_count())};
    parameter->ReadValues(tensor.values);
    tensors.push_back(std::move(tensor));
  }
  return *DecoderModel::FromTensors(config, tensors);
}

TEST(GgufRoundTrip, F32SaveAndLoadGiveBitIdenticalReferenceLogits) {
  const std::vector<uint32_t> tokens = {1, 5, 9, 0, 95, 42, 17, 3, 3, 60};
  for (const auto& [tied, kv_heads] : {std::pair<bool, size_t>{true, 4}, {false, 2}, {false, 1}}) {
    const DecoderModel original = F32ExactModel(tied, kv_heads);
    const std::string path = TempPath("roundtrip.gguf");
    ASSERT_TRUE(SaveGgufModel(original, GgmlType::kF32, path));
    Result<DecoderModel> loaded = LoadGgufModel(path, ModelStorage::kDenseF64);
    ASSERT_TRUE(loaded) << loaded.error().Debug();
    EXPECT_TRUE(loaded->config().SameAs(original.config()));
    const EngineOptions reference{Backend::kReference, Precision::kF64, 0, nullptr};
    const Rows expected = SessionLogits(original, tokens, reference);
    const Rows actual = SessionLogits(*loaded, tokens, reference);
    ASSERT_EQ(expected.size(), actual.size());
    for (size_t p = 0; p < expected.size(); ++p) {
      ASSERT_EQ(expected[p].size(), actual[p].size());
      EXPECT_EQ(std::memcmp(expected[p].data(), actual[p].data(), expected[p].size() * sizeof(double)), 0)
          << "position " << p << " tied " << tied << " kv_heads " << kv_heads;
    }
    // The panels load of the same file runs the fast engine to the same logits.
    Result<DecoderModel> panels = LoadGgufModel(path, ModelStorage::kPanelsF32);
    ASSERT_TRUE(panels) << panels.error().Debug();
    const Rows fast = SessionLogits(*panels, tokens, {Backend::kFast, Precision::kF32, 0, nullptr});
    EXPECT_LE(MaxDifference(fast, expected), 1e-4);
    std::filesystem::remove(path);
  }
}

TEST(GgufRoundTrip, QuantizedSavesLoadTheirDequantizedValues) {
  const DecoderModel original = F32ExactModel(false, 2);
  for (GgmlType type : {GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    const std::string path = TempPath("quantized.gguf");
    ASSERT_TRUE(SaveGgufModel(original, type, path));
    Result<GgufFile> file = GgufFile::Open(path);
    ASSERT_TRUE(file) << file.error().Debug();
    // ffn_down rows have 48 values: not whole 32-value blocks, so F16.
    const GgmlType down = TypeInfo(type).block_elements > 1 ? GgmlType::kF16 : type;
    EXPECT_EQ(file->FindTensor("blk.0.ffn_down.weight")->type, down) << GgmlTypeName(type);
    EXPECT_EQ(file->FindTensor("blk.0.attn_q.weight")->type, type);
    EXPECT_EQ(file->FindTensor("blk.0.attn_norm.weight")->type, GgmlType::kF32);
    Result<DecoderModel> loaded = BuildLlamaModel(*file, ModelStorage::kDenseF64);
    ASSERT_TRUE(loaded) << loaded.error().Debug();
    // Every loaded value is the dequantization of the stored bytes: compare the
    // query matrix with a re-quantization of the original's.
    const Parameter& q = original.block(0, BlockSlot::kQuery);
    std::vector<double> values(q.element_count());
    q.ReadValues(values);
    std::vector<float> stored(values.size());  // [out rows of in]
    for (size_t o = 0; o < 32; ++o) {
      for (size_t i = 0; i < 32; ++i) stored[o * 32 + i] = static_cast<float>(values[i * 32 + o]);
    }
    std::vector<uint8_t> bytes(*RowBytes(type, stored.size()));
    Quantize(type, stored, bytes);
    std::vector<float> back(stored.size());
    Dequantize(type, bytes, back);
    const std::span<const double> got = loaded->block(0, BlockSlot::kQuery).values();
    for (size_t o = 0; o < 32; ++o) {
      for (size_t i = 0; i < 32; ++i) ASSERT_EQ(got[i * 32 + o], static_cast<double>(back[o * 32 + i]));
    }
    std::filesystem::remove(path);
  }
}

TEST(GgufRoundTrip, TokenizerMetadataIsWritten) {
  const DecoderModel model = F32ExactModel(true, 4);
  GgufTokenizerMetadata tokenizer;
  for (int i = 0; i < 96; ++i) tokenizer.tokens.push_back("<" + std::to_string(i) + ">");
  tokenizer.scores.assign(96, 0.5f);
  tokenizer.token_types.assign(96, 1);
  tokenizer.bos_token_id = 1;
  tokenizer.eos_token_id = 2;
  const std::string path = TempPath("tokenizer.gguf");
  ASSERT_TRUE(SaveGgufModel(model, GgmlType::kF32, path, tokenizer));
  Result<GgufFile> file = GgufFile::Open(path);
  ASSERT_TRUE(file);
  EXPECT_EQ((*file->GetStringArray("tokenizer.ggml.tokens"))[95], "<95>");
  EXPECT_EQ((*file->GetArray<float>("tokenizer.ggml.scores"))[3], 0.5f);
  EXPECT_EQ(*file->Get<uint32_t>("tokenizer.ggml.eos_token_id"), 2u);
  EXPECT_EQ(file->FindTensor("output.weight"), nullptr);  // tied head
  tokenizer.tokens.pop_back();
  Result<void> mismatched = SaveGgufModel(model, GgmlType::kF32, path, tokenizer);
  ASSERT_FALSE(mismatched);
  EXPECT_EQ(mismatched.error().code(), ErrorCode::kInvalidArgument);
  Result<void> unsupported = SaveGgufModel(model, GgmlType::kQ6_K, path);
  ASSERT_FALSE(unsupported);
  EXPECT_EQ(unsupported.error().code(), ErrorCode::kUnsupportedTensorType);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kvrt::gguf::testing

namespace kvrt::gguf::testing {
namespace {

TEST(GgufWriterLayout, AlignmentAndEveryMetadataType) {
  GgufWriter writer;
  writer.SetAlignment(64);
  writer.AddU32("u32", 7);
  writer.AddI32("i32", -7);
  writer.AddU64("u64", uint64_t{1} << 40);
  writer.AddF32("f32", 0.25f);
  writer.AddBool("bool", true);
  writer.AddString("string", "text");
  const std::vector<std::string> strings = {"a", "", "ccc"};
  writer.AddStringArray("strings", strings);
  const int32_t ints[] = {-1, 2};
  writer.AddI32Array("ints", ints);
  const std::vector<float> a(32, 1.5f), b(64, -2.0f);
  const uint64_t a_ne[] = {32}, b_ne[] = {32, 2};
  ASSERT_TRUE(writer.AddTensor("a", a_ne, GgmlType::kQ8_0, a));
  ASSERT_TRUE(writer.AddTensor("b", b_ne, GgmlType::kBF16, b));
  EXPECT_FALSE(writer.AddTensor("c", a_ne, GgmlType::kQ8_0, b));  // 64 values for 32
  Result<std::vector<uint8_t>> bytes = writer.Serialize();
  ASSERT_TRUE(bytes);
  Result<GgufFile> file = GgufFile::Parse(*FileMapping::FromBytes(*bytes));
  ASSERT_TRUE(file) << file.error().Debug();
  EXPECT_EQ(file->alignment(), 64u);
  EXPECT_EQ(file->data_offset() % 64, 0u);
  EXPECT_EQ(*file->Get<int32_t>("i32"), -7);
  EXPECT_EQ(*file->Get<uint64_t>("u64"), uint64_t{1} << 40);
  EXPECT_EQ(*file->Get<float>("f32"), 0.25f);
  EXPECT_TRUE(*file->Get<bool>("bool"));
  EXPECT_EQ(*file->Get<std::string_view>("string"), "text");
  EXPECT_EQ(std::vector<std::string_view>(file->GetStringArray("strings")->begin(), file->GetStringArray("strings")->end()),
            (std::vector<std::string_view>{"a", "", "ccc"}));
  EXPECT_EQ((*file->GetArray<int32_t>("ints"))[0], -1);
  const TensorInfo& tb = *file->FindTensor("b");
  EXPECT_EQ(tb.offset % 64, 0u);
  std::vector<float> values(64);
  Dequantize(tb.type, tb.data, values);
  for (float v : values) EXPECT_EQ(v, -2.0f);
  Result<uint32_t> negative = file->Get<uint32_t>("i32");
  ASSERT_FALSE(negative);
  EXPECT_EQ(negative.error().code(), ErrorCode::kKeyValueOutOfRange);

  GgufWriter odd;
  odd.SetAlignment(48);
  Result<std::vector<uint8_t>> refused = odd.Serialize();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), ErrorCode::kInvalidAlignment);
}

}  // namespace
}  // namespace kvrt::gguf::testing
