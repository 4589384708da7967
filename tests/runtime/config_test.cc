#include "kvrt/config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace kvrt {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

ErrorCode FirstError(const ModelConfig& config) {
  Result<void> result = config.Validate();
  return result ? ErrorCode::kCount : result.error().code();
}

ModelConfig Fixture() { return ModelConfig::Create(5, 4, 2, 4, 2, 4, 10000.0, 1e-6); }

TEST(ModelConfigTest, ValidationOrderFollowsTheSpec) {
  EXPECT_EQ(FirstError(Fixture()), ErrorCode::kCount);
  // Every field broken at once: the first rule wins.
  EXPECT_EQ(FirstError(ModelConfig::Create(0, 0, 0, 0, 0, 0, -1.0, kNaN)),
            ErrorCode::kEmptyVocabulary);
  EXPECT_EQ(FirstError(ModelConfig::Create(5, 0, 0, 0, 0, 0, -1.0, kNaN)),
            ErrorCode::kZeroModelWidth);
  EXPECT_EQ(FirstError(ModelConfig::Create(5, 4, 0, 0, 0, 0, -1.0, kNaN)),
            ErrorCode::kZeroHeadCount);
  EXPECT_EQ(FirstError(ModelConfig::Create(5, 4, 3, 0, 0, 0, -1.0, kNaN)),
            ErrorCode::kModelWidthNotDivisible);
  EXPECT_EQ(FirstError(ModelConfig::Create(5, 6, 2, 0, 0, 0, -1.0, kNaN)),
            ErrorCode::kOddHeadWidth);
  EXPECT_EQ(FirstError(ModelConfig::Create(5, 4, 4, 0, 0, 0, -1.0, kNaN)),
            ErrorCode::kOddHeadWidth);
  EXPECT_EQ(FirstError(ModelConfig::Create(5, 4, 2, 0, 0, 0, -1.0, kNaN)),
            ErrorCode::kZeroFeedForwardWidth);
  EXPECT_EQ(FirstError(ModelConfig::Create(5, 4, 2, 4, 0, 0, -1.0, kNaN)),
            ErrorCode::kZeroPositionCapacity);
  EXPECT_EQ(FirstError(ModelConfig::Create(5, 4, 2, 4, 0, 4, -1.0, kNaN)),
            ErrorCode::kInvalidRopeBase);
  EXPECT_EQ(FirstError(ModelConfig::Create(5, 4, 2, 4, 0, 4, 1e4, kNaN)),
            ErrorCode::kInvalidRmsEpsilon);
}

TEST(ModelConfigTest, AcceptsTheDocumentedEdgeCases) {
  EXPECT_TRUE(ModelConfig::Create(5, 4, 2, 4, 0, 4, 1e4, 1e-6).Validate());  // L = 0
  EXPECT_TRUE(ModelConfig::Create(5, 4, 2, 4, 1, 4, 1e4, 0.0).Validate());   // eps = 0
  EXPECT_TRUE(ModelConfig::Create(5, 4, 2, 4, 1, 4, 0.5, 1e-6).Validate());  // base < 1
}

TEST(ModelConfigTest, RejectsEveryInvalidBaseAndEpsilon) {
  for (double base : {0.0, -0.0, -1.0, kInf, -kInf, kNaN}) {
    EXPECT_EQ(FirstError(ModelConfig::Create(5, 4, 2, 4, 1, 4, base, 1e-6)),
              ErrorCode::kInvalidRopeBase)
        << base;
  }
  for (double eps : {-1e-9, kInf, kNaN}) {
    EXPECT_EQ(FirstError(ModelConfig::Create(5, 4, 2, 4, 1, 4, 1e4, eps)),
              ErrorCode::kInvalidRmsEpsilon)
        << eps;
  }
}

TEST(ModelConfigTest, PayloadsAndMessagesMatchTheReference) {
  Result<void> result = ModelConfig::Create(5, 4, 3, 4, 1, 2, 1e4, 1e-6).Validate();
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().Debug(), "ModelWidthNotDivisible { model_width: 4, heads: 3 }");
  EXPECT_EQ(result.error().message(), "decoder model width 4 must be divisible by head count 3");
  result = ModelConfig::Create(5, 4, 2, 4, 1, 2, -10000.0, 1e-6).Validate();
  EXPECT_EQ(result.error().message(),
            "decoder RoPE base must be finite and positive, got -10000.0");
}

TEST(ModelConfigTest, GroupedQueryExtensionIsCheckedLast) {
  ModelConfig config = Fixture();
  config.kv_heads = 0;
  EXPECT_EQ(FirstError(config), ErrorCode::kZeroKeyValueHeads);
  config.heads = 2;
  config.model_width = 8;
  config.kv_heads = 3;
  EXPECT_EQ(FirstError(config), ErrorCode::kHeadsNotDivisibleByKeyValueHeads);
  config.kv_heads = 1;
  EXPECT_EQ(FirstError(config), ErrorCode::kCount);
}

TEST(ModelConfigTest, RopeFrequencyScaleIsCheckedAfterTheGroupedQueryExtension) {
  for (double scale : {0.0, -0.25, kInf, kNaN}) {
    ModelConfig config = Fixture();
    config.rope_freq_scale = scale;
    EXPECT_EQ(FirstError(config), ErrorCode::kInvalidRopeScale) << scale;
    config.kv_heads = 0;
    EXPECT_EQ(FirstError(config), ErrorCode::kZeroKeyValueHeads);
  }
  ModelConfig scaled = Fixture();
  scaled.rope_freq_scale = 0.25;
  EXPECT_EQ(FirstError(scaled), ErrorCode::kCount);
  EXPECT_FALSE(scaled.SameAs(Fixture()));
}

TEST(ModelConfigTest, SameAsComparesFloatBits) {
  ModelConfig a = Fixture(), b = Fixture();
  EXPECT_TRUE(a.SameAs(b));
  b.rms_epsilon = 2e-6;
  EXPECT_FALSE(a.SameAs(b));
  b = Fixture();
  b.rope_base = -0.0;
  a.rope_base = 0.0;
  EXPECT_FALSE(a.SameAs(b));  // == would say equal; the bit patterns differ
}

}  // namespace
}  // namespace kvrt
