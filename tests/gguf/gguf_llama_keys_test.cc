// The llama.* keys llama.cpp honours (issue 38): a file must mean the same to
// kvrt as to llama.cpp, or be refused with a typed error. llama.cpp reads a
// missing llama.rope.scaling.type as "linear" and rope.scaling.factor (or the
// older rope.scale_linear) as freq_scale = 1/factor, multiplying every RoPE angle;
// key_length/value_length change the head widths, and expert_count makes a
// mixture of experts. kvrt used to ignore all of them and give other logits.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gguf_rewrite.h"
#include "gguf_test_support.h"

namespace kvrt::gguf::testing {
namespace {

const std::vector<uint32_t> kTokens = {1, 5, 9, 2, 7, 3, 11, 4, 8, 6, 10, 12};

auto All() {
  return [](std::string_view) { return true; };
}

// The logits of both engines over the model of `bytes`, which must both match
// the plain f64 forward pass of the same file.
Rows ExpectEnginesMatchPlainForward(const std::vector<uint8_t>& bytes) {
  Result<GgufFile> file = ParseBytes(bytes);
  EXPECT_TRUE(file) << file.error().Debug();
  if (!file) return {};
  Result<DecoderModel> dense = BuildLlamaModel(*file, ModelStorage::kDenseF64);
  Result<DecoderModel> panels = BuildLlamaModel(*file, ModelStorage::kPanelsF32);
  EXPECT_TRUE(dense) << dense.error().Debug();
  EXPECT_TRUE(panels) << panels.error().Debug();
  if (!dense || !panels) return {};
  const Rows expected = PlainLlama(*file).Forward(kTokens);
  const Rows reference = SessionLogits(*dense, kTokens, {Backend::kReference, Precision::kF64});
  const Rows fast = SessionLogits(*panels, kTokens, {Backend::kFast, Precision::kF32});
  EXPECT_LE(MaxDifference(reference, expected), 1e-10);
  EXPECT_LE(MaxDifference(fast, expected), 1e-4);
  return reference;
}

TEST(GgufLlamaKeys, LinearRopeScalingDividesEveryAngleByTheFactor) {
  Result<GgufFile> file = ParseBytes(SmallModelFile(GgmlType::kF32));
  ASSERT_TRUE(file);
  const Rows plain = ExpectEnginesMatchPlainForward(Rewrite(*file, All(), [](GgufWriter&) {}));

  const Rows implicit_linear = ExpectEnginesMatchPlainForward(
      Rewrite(*file, All(), [](GgufWriter& w) { w.AddF32("llama.rope.scaling.factor", 4.0f); }));
  // The scaling must show in the logits, or this test could not fail.
  EXPECT_GT(MaxDifference(implicit_linear, plain), 1e-3);

  const Rows explicit_linear = ExpectEnginesMatchPlainForward(Rewrite(*file, All(), [](GgufWriter& w) {
    w.AddString("llama.rope.scaling.type", "linear");
    w.AddF32("llama.rope.scaling.factor", 4.0f);
  }));
  EXPECT_EQ(MaxDifference(explicit_linear, implicit_linear), 0.0);

  const Rows old_key = ExpectEnginesMatchPlainForward(
      Rewrite(*file, All(), [](GgufWriter& w) { w.AddF32("llama.rope.scale_linear", 4.0f); }));
  EXPECT_EQ(MaxDifference(old_key, implicit_linear), 0.0);

  // "none" never scales, whatever the factor says; a factor of 0 means none.
  const Rows none = ExpectEnginesMatchPlainForward(Rewrite(*file, All(), [](GgufWriter& w) {
    w.AddString("llama.rope.scaling.type", "none");
    w.AddF32("llama.rope.scaling.factor", 4.0f);
  }));
  EXPECT_EQ(MaxDifference(none, plain), 0.0);
  const Rows zero = ExpectEnginesMatchPlainForward(
      Rewrite(*file, All(), [](GgufWriter& w) { w.AddF32("llama.rope.scaling.factor", 0.0f); }));
  EXPECT_EQ(MaxDifference(zero, plain), 0.0);
}

// SaveGgufModel writes a scaled model's factor; reading it back gives the scale.
TEST(GgufLlamaKeys, RopeFrequencyScaleRoundTripsThroughTheWriter) {
  ModelConfig config = ModelConfig::Create(40, 32, 4, 64, 2, 16, 10000.0, 1e-5);
  config.rope_freq_scale = 0.25;
  SplitMix64 rng(3);
  Result<DecoderModel> model = DecoderModel::FromSeed(config, rng);
  ASSERT_TRUE(model) << model.error().Debug();
  const std::string path = ::testing::TempDir() + "/kvrt-scaled-" + std::to_string(::getpid()) + ".gguf";
  ASSERT_TRUE(SaveGgufModel(*model, GgmlType::kF32, path));
  Result<GgufFile> file = GgufFile::Open(path);
  ASSERT_TRUE(file);
  EXPECT_EQ(*file->Get<float>("llama.rope.scaling.factor"), 4.0f);
  Result<ModelConfig> read = LlamaConfig(*file);
  ASSERT_TRUE(read) << read.error().Debug();
  EXPECT_EQ(read->rope_freq_scale, 0.25);
  // A scale whose inverse is no f32 would not read back: refused.
  config.rope_freq_scale = 0.3;
  Result<DecoderModel> inexact = DecoderModel::FromSeed(config, rng);
  ASSERT_TRUE(inexact);
  EXPECT_FALSE(SaveGgufModel(*inexact, GgmlType::kF32, path));
  std::filesystem::remove(path);
}

TEST(GgufLlamaKeys, RopeScalingKvrtDoesNotImplementIsRefused) {
  Result<GgufFile> file = ParseBytes(SmallModelFile(GgmlType::kF32));
  ASSERT_TRUE(file);
  for (const char* type : {"yarn", "longrope", "ntk"}) {
    EXPECT_EQ(ModelError(Rewrite(*file, All(), [&](GgufWriter& w) { w.AddString("llama.rope.scaling.type", type); }),
                         type),
              ErrorCode::kUnsupportedRopeScaling);
  }
  for (const float factor : {-2.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    EXPECT_EQ(ModelError(Rewrite(*file, All(), [&](GgufWriter& w) { w.AddF32("llama.rope.scaling.factor", factor); }),
                         "llama.rope.scaling.factor"),
              ErrorCode::kUnsupportedRopeScaling)
        << factor;
  }
  // llama.cpp multiplies the rotated queries and keys by attn_factor.
  EXPECT_EQ(ModelError(Rewrite(*file, All(), [](GgufWriter& w) { w.AddF32("llama.rope.scaling.attn_factor", 2.0f); }),
                       "llama.rope.scaling.attn_factor"),
            ErrorCode::kUnsupportedRopeScaling);
  ExpectEnginesMatchPlainForward(
      Rewrite(*file, All(), [](GgufWriter& w) { w.AddF32("llama.rope.scaling.attn_factor", 1.0f); }));
}

TEST(GgufLlamaKeys, HeadWidthsMustMatchTheModelWidthOverTheHeads) {
  Result<GgufFile> file = ParseBytes(SmallModelFile(GgmlType::kF32));
  ASSERT_TRUE(file);  // width 32, 4 heads: head width 8
  for (const char* key : {"llama.attention.key_length", "llama.attention.value_length"}) {
    EXPECT_EQ(ModelError(Rewrite(*file, All(), [&](GgufWriter& w) { w.AddU32(key, 16); }), key),
              ErrorCode::kHeadWidthMismatch)
        << key;
    ExpectEnginesMatchPlainForward(Rewrite(*file, All(), [&](GgufWriter& w) { w.AddU32(key, 8); }));
  }
}

TEST(GgufLlamaKeys, MixturesOfExpertsAreRefused) {
  Result<GgufFile> file = ParseBytes(SmallModelFile(GgmlType::kF32));
  ASSERT_TRUE(file);
  EXPECT_EQ(ModelError(Rewrite(*file, All(), [](GgufWriter& w) { w.AddU32("llama.expert_count", 8); }),
                       "llama.expert_count"),
            ErrorCode::kUnsupportedExperts);
  EXPECT_EQ(ModelError(Rewrite(*file, All(), [](GgufWriter& w) { w.AddU32("llama.expert_used_count", 2); }),
                       "llama.expert_used_count"),
            ErrorCode::kUnsupportedExperts);
  ExpectEnginesMatchPlainForward(Rewrite(*file, All(), [](GgufWriter& w) {
    w.AddU32("llama.expert_count", 0);
    w.AddU32("llama.expert_used_count", 0);
  }));
}

}  // namespace
}  // namespace kvrt::gguf::testing
