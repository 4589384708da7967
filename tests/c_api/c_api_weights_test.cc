// The C API's weights option: the stable KVRT_WEIGHTS_* numbers equal
// kvrt::WeightFormat's, every format binds on both backends and the fast engine
// stays within 1e-4 of the reference oracle on the same dequantized weights, and
// an unknown number is refused as InvalidArgument.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "c_api_scenarios.h"
#include "kvrt/kvrt.h"
#include "kvrt/weight_format.h"
#include "test_support.h"

namespace kvrt {
namespace {

static_assert(KVRT_WEIGHTS_AS_STORED == static_cast<int>(WeightFormat::kAsStored));
static_assert(KVRT_WEIGHTS_F32 == static_cast<int>(WeightFormat::kF32));
static_assert(KVRT_WEIGHTS_BF16 == static_cast<int>(WeightFormat::kBf16));
static_assert(KVRT_WEIGHTS_F16 == static_cast<int>(WeightFormat::kF16));
static_assert(KVRT_WEIGHTS_Q8_0 == static_cast<int>(WeightFormat::kQ8_0));
static_assert(KVRT_WEIGHTS_Q4_0 == static_cast<int>(WeightFormat::kQ4_0));
static_assert(KVRT_WEIGHTS_Q4_K == static_cast<int>(WeightFormat::kQ4_K));
static_assert(KVRT_WEIGHTS_Q6_K == static_cast<int>(WeightFormat::kQ6_K));
static_assert(KVRT_WEIGHTS_Q5_K == static_cast<int>(WeightFormat::kQ5_K));
static_assert(KVRT_WEIGHTS_Q4_K_S == static_cast<int>(WeightFormat::kQ4_K_S));
static_assert(KVRT_WEIGHTS_Q4_K_M == static_cast<int>(WeightFormat::kQ4_K_M));
static_assert(KVRT_WEIGHTS_Q5_K_S == static_cast<int>(WeightFormat::kQ5_K_S));
static_assert(KVRT_WEIGHTS_Q5_K_M == static_cast<int>(WeightFormat::kQ5_K_M));
static_assert(KVRT_WEIGHTS_Q5_0 == static_cast<int>(WeightFormat::kQ5_0));
static_assert(KVRT_WEIGHTS_Q5_0 == 13);
static_assert(KVRT_WEIGHTS_Q3_K == 14 && KVRT_WEIGHTS_Q3_K == static_cast<int>(WeightFormat::kQ3_K));
static_assert(KVRT_WEIGHTS_Q3_K_M == 15 && KVRT_WEIGHTS_Q3_K_M == static_cast<int>(WeightFormat::kQ3_K_M));
static_assert(KVRT_WEIGHTS_IQ4_NL == static_cast<int>(WeightFormat::kIQ4_NL));
static_assert(KVRT_WEIGHTS_IQ4_NL == 16);
static_assert(KVRT_WEIGHTS_IQ4_XS == static_cast<int>(WeightFormat::kIQ4_XS));
static_assert(KVRT_WEIGHTS_IQ4_XS == 17);
static_assert(KVRT_WEIGHTS_Q4_1 == 18 && KVRT_WEIGHTS_Q4_1 == static_cast<int>(WeightFormat::kQ4_1));
static_assert(KVRT_WEIGHTS_Q5_1 == 19 && KVRT_WEIGHTS_Q5_1 == static_cast<int>(WeightFormat::kQ5_1));
static_assert(KVRT_WEIGHTS_Q2_K == 20 && KVRT_WEIGHTS_Q2_K == static_cast<int>(WeightFormat::kQ2_K));
// The first number past the last format.
constexpr int kUnknownWeights = KVRT_WEIGHTS_Q2_K + 1;

const std::string kModel = testing::FixturePath("llama2c/gqa_untied.bin");
constexpr size_t kVocabulary = 512;

TEST(CApiWeightsTest, FastMatchesTheReferenceOnTheSameWeights) {
  const std::vector<uint32_t> tokens = {1, 17, 42, 99, 5};
  for (const int weights : {KVRT_WEIGHTS_AS_STORED, KVRT_WEIGHTS_F32, KVRT_WEIGHTS_BF16, KVRT_WEIGHTS_F16,
                            KVRT_WEIGHTS_Q8_0, KVRT_WEIGHTS_Q4_0, KVRT_WEIGHTS_Q5_0, KVRT_WEIGHTS_IQ4_NL,
                            KVRT_WEIGHTS_IQ4_XS, KVRT_WEIGHTS_Q4_K, KVRT_WEIGHTS_Q5_K, KVRT_WEIGHTS_Q6_K,
                            KVRT_WEIGHTS_Q4_K_M, KVRT_WEIGHTS_Q5_K_S, KVRT_WEIGHTS_Q3_K, KVRT_WEIGHTS_Q3_K_M,
                            KVRT_WEIGHTS_Q4_1, KVRT_WEIGHTS_Q5_1, KVRT_WEIGHTS_Q2_K}) {
    std::vector<double> fast(kVocabulary), reference(kVocabulary);
    ASSERT_EQ(CApiWeightsLogits(kModel.c_str(), tokens.data(), tokens.size(), KVRT_BACKEND_FAST, weights,
                                fast.data(), kVocabulary),
              0)
        << weights;
    ASSERT_EQ(CApiWeightsLogits(kModel.c_str(), tokens.data(), tokens.size(), KVRT_BACKEND_REFERENCE, weights,
                                reference.data(), kVocabulary),
              0)
        << weights;
    for (size_t i = 0; i < kVocabulary; ++i) {
      ASSERT_NEAR(fast[i], reference[i], 1e-4) << "weights " << weights << " logit " << i;
    }
  }
}

TEST(CApiWeightsTest, CompressedWeightsChangeTheLogits) {
  // A format that actually quantizes gives other logits than f32 (the option is
  // not ignored on the way through the C API).
  const std::vector<uint32_t> tokens = {1, 17, 42};
  std::vector<double> f32(kVocabulary), q4(kVocabulary);
  ASSERT_EQ(CApiWeightsLogits(kModel.c_str(), tokens.data(), tokens.size(), KVRT_BACKEND_REFERENCE,
                              KVRT_WEIGHTS_F32, f32.data(), kVocabulary),
            0);
  ASSERT_EQ(CApiWeightsLogits(kModel.c_str(), tokens.data(), tokens.size(), KVRT_BACKEND_REFERENCE,
                              KVRT_WEIGHTS_Q4_0, q4.data(), kVocabulary),
            0);
  double largest = 0.0;
  for (size_t i = 0; i < kVocabulary; ++i) largest = std::max(largest, std::fabs(f32[i] - q4[i]));
  EXPECT_GT(largest, 1e-6);
}

TEST(CApiWeightsTest, UnknownWeightsAreInvalidArgument) {
  const std::vector<uint32_t> tokens = {1};
  std::vector<double> logits(kVocabulary);
  for (const int backend : {KVRT_BACKEND_FAST, KVRT_BACKEND_REFERENCE}) {
    EXPECT_EQ(CApiWeightsLogits(kModel.c_str(), tokens.data(), tokens.size(), backend, kUnknownWeights, logits.data(),
                                kVocabulary),
              -1);
    EXPECT_EQ(CApiWeightsLogits(kModel.c_str(), tokens.data(), tokens.size(), backend, 1000, logits.data(),
                                kVocabulary),
              -1);
  }
}

TEST(CApiWeightsTest, PreparedWeightsGiveTheSameLogits) {
  const std::vector<uint32_t> tokens = {1, 17, 42, 99};
  for (const int backend : {KVRT_BACKEND_FAST, KVRT_BACKEND_REFERENCE}) {
    for (const int weights : {KVRT_WEIGHTS_AS_STORED, KVRT_WEIGHTS_F32, KVRT_WEIGHTS_BF16, KVRT_WEIGHTS_F16,
                              KVRT_WEIGHTS_Q8_0, KVRT_WEIGHTS_Q4_0, KVRT_WEIGHTS_Q5_0, KVRT_WEIGHTS_IQ4_NL,
                              KVRT_WEIGHTS_IQ4_XS, KVRT_WEIGHTS_Q4_K, KVRT_WEIGHTS_Q5_K, KVRT_WEIGHTS_Q6_K,
                              KVRT_WEIGHTS_Q4_K_S, KVRT_WEIGHTS_Q5_K_M, KVRT_WEIGHTS_Q3_K, KVRT_WEIGHTS_Q3_K_M,
                              KVRT_WEIGHTS_Q4_1, KVRT_WEIGHTS_Q5_1}) {
      std::vector<double> bound(kVocabulary), prepared(kVocabulary);
      ASSERT_EQ(CApiWeightsLogits(kModel.c_str(), tokens.data(), tokens.size(), backend, weights,
                                  bound.data(), kVocabulary),
                0);
      ASSERT_EQ(CApiPreparedWeightsLogits(kModel.c_str(), tokens.data(), tokens.size(), backend,
                                          weights, prepared.data(), kVocabulary),
                0)
          << "backend " << backend << " weights " << weights;
      EXPECT_EQ(bound, prepared) << "backend " << backend << " weights " << weights;
    }
    std::vector<double> logits(kVocabulary);
    for (const int unknown : {kUnknownWeights, -1}) {
      EXPECT_EQ(CApiPreparedWeightsLogits(kModel.c_str(), tokens.data(), tokens.size(), backend, unknown,
                                          logits.data(), kVocabulary),
                -1)
          << unknown;
    }
  }
  kvrt_error* no_model = kvrt_model_prepare_weights(nullptr, nullptr);
  EXPECT_EQ(kvrt_error_code(no_model), KVRT_ERR_INVALID_ARGUMENT);
  kvrt_error_free(no_model);
}

}  // namespace
}  // namespace kvrt
