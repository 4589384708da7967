// The llama2.c checkpoint reader and writer: exact round trips of every layout,
// the mapping of the header to the config, and typed errors — never a crash or
// an allocation sized by the header — for truncated, inconsistent, hostile and
// non-finite files.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/allocation_faults.h"
#include "kvrt/load_model.h"
#include "core/buffer.h"
#include "formats/llama2c/llama2c.h"
#include "model/decoder_model.h"
#include "llama2c_test_support.h"

namespace kvrt {
namespace {

using testing::HeaderBytes;
using testing::ScratchDir;
using testing::SmallConfig;
using testing::WriteBytes;

std::vector<double> Values(const Parameter& parameter) {
  std::vector<double> values(parameter.element_count());
  parameter.ReadValues(values);
  return values;
}

// A valid small file's bytes: header of SmallConfig, then its weights.
std::vector<uint8_t> SmallFile(const ScratchDir& dir, size_t kv_heads, bool tied) {
  SplitMix64 rng(5);
  Result<DecoderModel> model = DecoderModel::FromSeed(SmallConfig(kv_heads, tied), rng, ModelStorage::kPanelsF32);
  EXPECT_TRUE(model);
  const std::string path = dir.File("small.bin");
  EXPECT_TRUE(SaveLlama2cModel(*model, path));
  return testing::ReadBytes(path);
}

Result<DecoderModel> LoadBytes(const ScratchDir& dir, const std::vector<uint8_t>& bytes) {
  const std::string path = dir.File("candidate.bin");
  WriteBytes(path, bytes);
  return LoadLlama2cModel(path);
}

TEST(Llama2cReaderTest, RoundTripsEveryShapeExactly) {
  ScratchDir dir;
  for (const auto& [kv_heads, tied] : {std::pair<size_t, bool>{4, true}, {4, false}, {2, true}, {1, false}}) {
    SCOPED_TRACE(std::to_string(kv_heads) + (tied ? " tied" : " untied"));
    const ModelConfig config = SmallConfig(kv_heads, tied);
    SplitMix64 rng(11);
    Result<DecoderModel> source = DecoderModel::FromSeed(config, rng, ModelStorage::kPanelsF32);
    ASSERT_TRUE(source) << source.error().Debug();
    const std::string path = dir.File("model.bin");
    ASSERT_TRUE(SaveLlama2cModel(*source, path));
    EXPECT_EQ(std::filesystem::file_size(path), *Llama2cFileBytes(config));
    Result<DecoderModel> loaded = LoadLlama2cModel(path);
    ASSERT_TRUE(loaded) << loaded.error().Debug();
    EXPECT_TRUE(loaded->config().SameAs(config));
    EXPECT_EQ(loaded->config().kv_heads, kv_heads);
    EXPECT_EQ(loaded->config().tied_output, tied);
    ASSERT_EQ(loaded->parameters().size(), source->parameters().size());
    for (size_t i = 0; i < source->parameters().size(); ++i) {
      const Parameter& a = source->parameter(i);
      const Parameter& b = loaded->parameter(i);
      EXPECT_EQ(a.name(), b.name());
      EXPECT_EQ(a.shape(), b.shape());
      EXPECT_EQ(a.layout(), b.layout()) << a.name();
      EXPECT_EQ(Values(a), Values(b)) << a.name();
    }
  }
}

TEST(Llama2cReaderTest, DenseModelsAreWrittenRoundedToF32) {
  ScratchDir dir;
  SplitMix64 rng(3);
  Result<DecoderModel> dense = DecoderModel::FromSeed(SmallConfig(2, false), rng);
  ASSERT_TRUE(dense);
  ASSERT_TRUE(SaveLlama2cModel(*dense, dir.File("dense.bin")));
  Result<DecoderModel> loaded = LoadLlama2cModel(dir.File("dense.bin"));
  ASSERT_TRUE(loaded) << loaded.error().Debug();
  for (size_t i = 0; i < dense->parameters().size(); ++i) {
    const std::vector<double> original = Values(dense->parameter(i)), read = Values(loaded->parameter(i));
    for (size_t j = 0; j < original.size(); ++j) {
      ASSERT_EQ(read[j], static_cast<double>(static_cast<float>(original[j]))) << dense->parameter(i).name();
    }
  }
}

TEST(Llama2cReaderTest, HeaderMapsToTheConfig) {
  const Llama2cHeader header{288, 768, 6, 6, 2, -32000, 256};
  Result<ModelConfig> config = Llama2cConfig(header);
  ASSERT_TRUE(config) << config.error().Debug();
  EXPECT_EQ(config->model_width, 288u);
  EXPECT_EQ(config->feed_forward_width, 768u);
  EXPECT_EQ(config->layers, 6u);
  EXPECT_EQ(config->heads, 6u);
  EXPECT_EQ(config->kv_heads, 2u);
  EXPECT_EQ(config->vocabulary_size, 32000u);
  EXPECT_FALSE(config->tied_output);
  EXPECT_EQ(config->max_positions, 256u);
  EXPECT_EQ(config->rope_base, 10000.0);
  EXPECT_EQ(config->rms_epsilon, 1e-5);
  Result<Llama2cHeader> back = Llama2cHeaderOf(*config);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->vocab_size, -32000);
  EXPECT_EQ(back->n_kv_heads, 2);
}

TEST(Llama2cReaderTest, OutOfRangeHeaderFieldsAreTyped) {
  const Llama2cHeader valid{16, 24, 2, 4, 4, 300, 12};
  int32_t Llama2cHeader::*fields[] = {&Llama2cHeader::dim,     &Llama2cHeader::hidden_dim,
                                      &Llama2cHeader::n_layers, &Llama2cHeader::n_heads,
                                      &Llama2cHeader::n_kv_heads, &Llama2cHeader::seq_len};
  const char* names[] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "seq_len"};
  for (size_t i = 0; i < std::size(fields); ++i) {
    for (int32_t bad : {0, -1, std::numeric_limits<int32_t>::min()}) {
      Llama2cHeader header = valid;
      header.*fields[i] = bad;
      Result<ModelConfig> config = Llama2cConfig(header);
      ASSERT_FALSE(config) << names[i] << " " << bad;
      EXPECT_EQ(config.error().code(), ErrorCode::kInvalidHeaderValue);
      EXPECT_EQ(std::get<std::string>(*config.error().Field("field")), names[i]);
    }
  }
  Llama2cHeader zero_vocab = valid;
  zero_vocab.vocab_size = 0;
  EXPECT_EQ(Llama2cConfig(zero_vocab).error().code(), ErrorCode::kInvalidHeaderValue);
}

TEST(Llama2cReaderTest, InconsistentHeadersAreTyped) {
  for (const Llama2cHeader& header : {
           Llama2cHeader{30, 24, 2, 4, 4, 300, 12},  // dim not divisible by n_heads
           Llama2cHeader{12, 24, 2, 4, 4, 300, 12},  // head size 3 is odd
           Llama2cHeader{16, 24, 2, 4, 3, 300, 12},  // n_kv_heads does not divide n_heads
           Llama2cHeader{16, 24, 2, 4, 8, 300, 12},  // more kv heads than heads
       }) {
    Result<ModelConfig> config = Llama2cConfig(header);
    ASSERT_FALSE(config);
    EXPECT_EQ(config.error().code(), ErrorCode::kInconsistentHeader) << config.error().message();
  }
}

TEST(Llama2cReaderTest, TruncatedFilesAreTypedAndAllocateNothing) {
  ScratchDir dir;
  const std::vector<uint8_t> file = SmallFile(dir, 2, false);
  for (const size_t length : {size_t{0}, size_t{3}, size_t{27}, size_t{28}, size_t{29}, file.size() / 2,
                              file.size() - 1}) {
    SCOPED_TRACE(length);
    const std::vector<uint8_t> cut(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(length));
    const uint64_t before = memory::AllocationCallsOnThisThread();
    Result<DecoderModel> model = LoadBytes(dir, cut);
    ASSERT_FALSE(model);
    EXPECT_EQ(model.error().code(), ErrorCode::kTruncated) << model.error().message();
    EXPECT_EQ(memory::AllocationCallsOnThisThread(), before);
    if (length >= kLlama2cHeaderBytes) {
      EXPECT_EQ(model.error().U64("expected"), file.size());
      EXPECT_EQ(model.error().U64("actual"), length);
    }
  }
}

TEST(Llama2cReaderTest, TrailingBytesAndAMislabelledHeadAreTyped) {
  ScratchDir dir;
  std::vector<uint8_t> longer = SmallFile(dir, 4, true);
  longer.insert(longer.end(), 4, 0);
  Result<DecoderModel> model = LoadBytes(dir, longer);
  ASSERT_FALSE(model);
  EXPECT_EQ(model.error().code(), ErrorCode::kTrailingBytes);

  // An untied file whose vocab_size lost its sign: the classifier is left over.
  std::vector<uint8_t> untied = SmallFile(dir, 4, false);
  const int32_t positive = 300;
  std::memcpy(&untied[20], &positive, 4);
  model = LoadBytes(dir, untied);
  ASSERT_FALSE(model);
  EXPECT_EQ(model.error().code(), ErrorCode::kTrailingBytes);
}

TEST(Llama2cReaderTest, HugeDimensionsFailBeforeAnyAllocation) {
  ScratchDir dir;
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  for (const Llama2cHeader& header : {
           Llama2cHeader{1 << 30, 1 << 30, kMax, 1 << 29, 1 << 29, -kMax, kMax},  // products overflow
           Llama2cHeader{16, 24, kMax, 4, 4, 300, 12},                            // layers past the file
           Llama2cHeader{16, 24, 2, 4, 4, std::numeric_limits<int32_t>::min(), 12},
           Llama2cHeader{16, 24, 2, 4, 4, 300, kMax},  // RoPE tables past the file
       }) {
    std::vector<uint8_t> bytes = HeaderBytes(header);
    bytes.resize(bytes.size() + 4096, 0);
    const uint64_t before = memory::AllocationCallsOnThisThread();
    Result<DecoderModel> model = LoadBytes(dir, bytes);
    ASSERT_FALSE(model);
    EXPECT_TRUE(model.error().code() == ErrorCode::kTruncated || model.error().code() == ErrorCode::kSizeOverflow)
        << model.error().Debug();
    EXPECT_EQ(memory::AllocationCallsOnThisThread(), before);
  }
}

TEST(Llama2cReaderTest, NonFiniteWeightsAreNamed) {
  ScratchDir dir;
  std::vector<uint8_t> file = SmallFile(dir, 4, true);
  // The first float of layer 0's wq: after the header, the [300, 16] token table
  // and the [2, 16] attention gains.
  const size_t offset = kLlama2cHeaderBytes + 4 * (300 * 16 + 2 * 16);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(&file[offset], &nan, 4);
  Result<DecoderModel> model = LoadBytes(dir, file);
  ASSERT_FALSE(model);
  EXPECT_EQ(model.error().code(), ErrorCode::kNonFiniteParameter);
  EXPECT_EQ(std::get<std::string>(*model.error().Field("name")), "blocks.0.attention.query.weight");
  EXPECT_EQ(model.error().U64("index"), 0u);
}

TEST(Llama2cReaderTest, MissingFilesAndForeignConfigsAreTyped) {
  ScratchDir dir;
  Result<DecoderModel> missing = LoadLlama2cModel(dir.File("absent.bin"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kIo);

  ModelConfig config = SmallConfig(4, true);
  config.rope_base = 500000.0;  // not expressible: llama2.c fixes 10000
  SplitMix64 rng(1);
  Result<DecoderModel> model = DecoderModel::FromSeed(config, rng);
  ASSERT_TRUE(model);
  Result<void> saved = SaveLlama2cModel(*model, dir.File("foreign.bin"));
  ASSERT_FALSE(saved);
  EXPECT_EQ(saved.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(dir.File("foreign.bin")));
}

TEST(Llama2cReaderTest, FormatIsDetectedByContent) {
  EXPECT_EQ(*DetectModelFormat(testing::FixturePath("checkpoints/ch38_loaded.ckpt")), ModelFormat::kLlmcp35);
  EXPECT_EQ(*DetectModelFormat(testing::FixturePath("llama2c/gqa_untied.bin")), ModelFormat::kLlama2c);
  ScratchDir dir;
  // Neither format: the name decides whose reader explains the damage.
  WriteBytes(dir.File("tiny.bin"), {1, 2, 3});
  EXPECT_EQ(*DetectModelFormat(dir.File("tiny.bin")), ModelFormat::kLlama2c);
  WriteBytes(dir.File("tiny.ckpt"), {1, 2, 3});
  EXPECT_EQ(*DetectModelFormat(dir.File("tiny.ckpt")), ModelFormat::kLlmcp35);
  EXPECT_EQ(DetectModelFormat(dir.File("absent.bin")).error().code(), ErrorCode::kIo);
  // A damaged checkpoint stays a checkpoint, so its error is the reference's.
  for (const char* corrupt : {"corrupt/01_truncated_fixed_header.ckpt", "corrupt/02_bad_magic.ckpt"}) {
    EXPECT_EQ(*DetectModelFormat(testing::FixturePath(corrupt)), ModelFormat::kLlmcp35) << corrupt;
  }
  // A llama2.c model cut short keeps its valid header: the llama2.c reader reports it.
  const std::vector<uint8_t> model = testing::ReadBytes(testing::FixturePath("llama2c/gqa_untied.bin"));
  WriteBytes(dir.File("cut.bin"), std::vector<uint8_t>(model.begin(), model.begin() + 100));
  EXPECT_EQ(*DetectModelFormat(dir.File("cut.bin")), ModelFormat::kLlama2c);
}

}  // namespace
}  // namespace kvrt
