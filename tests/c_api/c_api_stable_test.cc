// The C API's contract beyond the scenarios: error numbers that never move, the
// library version, a thread pool shared between sessions and generations, and
// logits as float.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "c_api/c_error_codes.h"
#include "kvrt/kvrt.h"
#include "test_support.h"

namespace kvrt {
namespace {

// Pinned numbers: once published, a code keeps its number whatever happens to
// the C++ enum.
static_assert(KVRT_ERR_EMPTY_VOCABULARY == 0);
static_assert(KVRT_ERR_IO == 36);
static_assert(KVRT_ERR_TRUNCATED == 37);
static_assert(KVRT_ERR_ALLOCATION_FAILED == 90);
static_assert(KVRT_ERR_INVALID_ARGUMENT == 149);
static_assert(KVRT_ERR_INVARIANT_VIOLATION == 150);
static_assert(KVRT_ERR_TENSOR_SHAPE_MISMATCH == 186);
static_assert(KVRT_ERR_SLOT_OUT_OF_RANGE == 187);
static_assert(KVRT_ERR_SLOT_REQUEST == 193);
static_assert(KVRT_ERR_INVALID_ROPE_SCALE == 194);
static_assert(KVRT_ERR_UNSUPPORTED_CHAT_TEMPLATE == 197);
static_assert(KVRT_ERR_NONE == -1);

TEST(CApiStableTest, EveryVariantHasItsOwnCodeAndName) {
  std::set<int> seen;
  for (int i = 0; i < static_cast<int>(ErrorCode::kCount); ++i) {
    const ErrorCode code = static_cast<ErrorCode>(i);
    const int c_code = c_api::CErrorCode(code);
    EXPECT_TRUE(seen.insert(c_code).second) << ErrorName(code) << " shares code " << c_code;
    EXPECT_EQ(c_api::CppErrorCode(c_code), code);
    EXPECT_EQ(std::string(kvrt_error_code_name(c_code)), std::string(ErrorName(code)));
  }
  EXPECT_STREQ(kvrt_error_code_name(KVRT_ERR_TRUNCATED), "Truncated");
  EXPECT_STREQ(kvrt_error_code_name(-5), "Unknown");
  EXPECT_STREQ(kvrt_error_code_name(100000), "Unknown");
  EXPECT_EQ(kvrt_error_code(nullptr), KVRT_ERR_NONE);

  kvrt_model* model = nullptr;
  kvrt_error* error = kvrt_model_load("/nonexistent/model.bin", &model);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(kvrt_error_code(error), KVRT_ERR_IO);
  kvrt_error_free(error);
}

TEST(CApiStableTest, VersionIsTheProjectVersion) {
  ASSERT_NE(kvrt_version(), nullptr);
  EXPECT_TRUE(std::regex_match(kvrt_version(), std::regex(R"(\d+\.\d+\.\d+)"))) << kvrt_version();
}

class CApiModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(kvrt_model_load(testing::FixturePath("llama2c/gqa_untied.bin").c_str(), &model_), nullptr);
    kvrt_model_info info;
    kvrt_model_get_info(model_, &info);
    vocabulary_ = info.vocabulary_size;
  }
  void TearDown() override { kvrt_model_free(model_); }

  // The last logits of prefilling `tokens` through a fresh cache and session.
  std::vector<double> PrefillLogits(const kvrt_engine_options& engine, const std::vector<uint32_t>& tokens) {
    kvrt_cache* cache = nullptr;
    EXPECT_EQ(kvrt_cache_create(model_, 0, engine.precision, &cache), nullptr);
    kvrt_session* session = nullptr;
    EXPECT_EQ(kvrt_session_bind(cache, model_, &engine, &session), nullptr);
    const double* logits = nullptr;
    EXPECT_EQ(kvrt_session_prefill(session, tokens.data(), tokens.size(), &logits), nullptr);
    std::vector<double> out(logits, logits + vocabulary_);
    kvrt_session_free(session);
    kvrt_cache_free(cache);
    return out;
  }

  kvrt_model* model_ = nullptr;
  size_t vocabulary_ = 0;
};

TEST_F(CApiModelTest, ASharedPoolServesEverySessionAndGeneration) {
  kvrt_pool* pool = nullptr;
  ASSERT_EQ(kvrt_pool_create(2, &pool), nullptr);
  EXPECT_EQ(kvrt_pool_threads(pool), 2u);
  kvrt_engine_options pooled = kvrt_engine_options_default();
  pooled.pool = pool;
  kvrt_engine_options serial = kvrt_engine_options_default();
  serial.threads = 1;
  const std::vector<uint32_t> tokens = {1, 5, 9, 2};
  // Bit-identical for any thread count, and two sessions can share the pool.
  const std::vector<double> want = PrefillLogits(serial, tokens);
  EXPECT_EQ(PrefillLogits(pooled, tokens), want);
  EXPECT_EQ(PrefillLogits(pooled, tokens), want);

  kvrt_generation_options options = kvrt_generation_options_default();
  options.max_new_tokens = 4;
  kvrt_generation* with_pool = nullptr;
  kvrt_generation* without = nullptr;
  ASSERT_EQ(kvrt_generate(model_, tokens.data(), tokens.size(), &options, &pooled, nullptr, nullptr, &with_pool),
            nullptr);
  ASSERT_EQ(kvrt_generate(model_, tokens.data(), tokens.size(), &options, &serial, nullptr, nullptr, &without),
            nullptr);
  ASSERT_EQ(kvrt_generation_count(with_pool), kvrt_generation_count(without));
  EXPECT_EQ(std::memcmp(kvrt_generation_tokens(with_pool), kvrt_generation_tokens(without),
                        kvrt_generation_count(without) * sizeof(uint32_t)),
            0);
  kvrt_generation_free(with_pool);
  kvrt_generation_free(without);
  kvrt_pool_free(pool);

  kvrt_pool* too_big = nullptr;
  kvrt_error* error = kvrt_pool_create(5000, &too_big);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(kvrt_error_code(error), KVRT_ERR_INVALID_ARGUMENT);
  kvrt_error_free(error);
}

TEST_F(CApiModelTest, MaxRowsPerStepChunksThePrefillWithoutChangingIt) {
  kvrt_engine_options whole = kvrt_engine_options_default();
  whole.threads = 1;
  EXPECT_EQ(whole.max_rows_per_step, 512u);
  kvrt_engine_options chunked = whole;
  chunked.max_rows_per_step = 2;
  kvrt_engine_options unset = whole;
  unset.max_rows_per_step = 0;  // an initializer without the field: the default
  const std::vector<uint32_t> tokens = {1, 5, 9, 2, 7};
  const std::vector<double> want = PrefillLogits(whole, tokens);
  EXPECT_EQ(PrefillLogits(chunked, tokens), want);
  EXPECT_EQ(PrefillLogits(unset, tokens), want);
}

TEST_F(CApiModelTest, AllowBatchVarianceOptsIntoTheFasterPrefillWithinTolerance) {
  kvrt_engine_options invariant = kvrt_engine_options_default();
  invariant.threads = 1;
  EXPECT_EQ(invariant.allow_batch_variance, 0);  // 0, also an initializer without the field
  kvrt_engine_options variant = invariant;
  variant.allow_batch_variance = 1;
  const std::vector<uint32_t> tokens = {1, 5, 9, 2, 7, 3, 3, 8, 1, 6, 4, 2, 9, 5, 7, 1, 2, 3, 4, 5};
  const std::vector<double> want = PrefillLogits(invariant, tokens);
  const std::vector<double> got = PrefillLogits(variant, tokens);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  EXPECT_LE(worst, 1e-4);
  EXPECT_NE(got, want) << "the batch-variant kernel did not run";
  // Independent of the thread count.
  kvrt_engine_options two = variant;
  two.threads = 2;
  EXPECT_EQ(PrefillLogits(two, tokens), got);
  // Anything but 0 or 1 is rejected at bind.
  for (int bad : {2, -1}) {
    kvrt_engine_options wrong = invariant;
    wrong.allow_batch_variance = bad;
    kvrt_cache* cache = nullptr;
    ASSERT_EQ(kvrt_cache_create(model_, 0, wrong.precision, &cache), nullptr);
    kvrt_session* session = nullptr;
    kvrt_error* error = kvrt_session_bind(cache, model_, &wrong, &session);
    ASSERT_NE(error, nullptr) << bad;
    EXPECT_EQ(kvrt_error_code(error), KVRT_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_EQ(session, nullptr);
    kvrt_error_free(error);
    kvrt_cache_free(cache);
  }
}

// An opt-in rounding of the activations, the 0/1 field `opt_in` of the options, on
// `weights` it reaches: 0 in the default options (as in an initializer without the
// field); on, it moves the logits but not with the thread count; outside the fast f32
// engine it is UnsupportedBackend, and a value other than 0 or 1 InvalidArgument.
class CApiActivationsTest : public CApiModelTest {
 protected:
  void ExpectOptIn(kvrt_weights weights, int kvrt_engine_options::*opt_in) {
    kvrt_engine_options exact = kvrt_engine_options_default();
    exact.threads = 1;
    exact.weights = weights;
    EXPECT_EQ(exact.*opt_in, 0);  // 0, also an initializer without the field
    kvrt_engine_options rounded = exact;
    rounded.*opt_in = 1;
    const std::vector<uint32_t> tokens = {1, 5, 9, 2, 7, 3, 3, 8};
    const std::vector<double> want = PrefillLogits(exact, tokens);
    const std::vector<double> got = PrefillLogits(rounded, tokens);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_NE(got, want) << "the opt-in kernel did not run";
    kvrt_engine_options two = rounded;
    two.threads = 2;
    EXPECT_EQ(PrefillLogits(two, tokens), got);
    kvrt_engine_options reference = rounded;
    reference.backend = KVRT_BACKEND_REFERENCE;
    reference.precision = KVRT_PRECISION_F64;
    kvrt_engine_options bad = rounded;
    bad.*opt_in = 2;
    for (const auto& [options, code] : {std::pair{reference, KVRT_ERR_UNSUPPORTED_BACKEND},
                                        std::pair{bad, KVRT_ERR_INVALID_ARGUMENT}}) {
      kvrt_cache* cache = nullptr;
      ASSERT_EQ(kvrt_cache_create(model_, 0, options.precision, &cache), nullptr);
      kvrt_session* session = nullptr;
      kvrt_error* error = kvrt_session_bind(cache, model_, &options, &session);
      ASSERT_NE(error, nullptr);
      EXPECT_EQ(kvrt_error_code(error), code) << kvrt_error_message(error);
      EXPECT_EQ(session, nullptr);
      kvrt_error_free(error);
      kvrt_cache_free(cache);
    }
  }
};

TEST_F(CApiActivationsTest, Int8ActivationsOptInOnQuantizedWeights) {
  ExpectOptIn(KVRT_WEIGHTS_Q8_0, &kvrt_engine_options::int8_activations);
}

TEST_F(CApiActivationsTest, Bf16ActivationsOptInOnBf16Weights) {
  ExpectOptIn(KVRT_WEIGHTS_BF16, &kvrt_engine_options::bf16_activations);
}

// The last logits of a prefill through a cache made for the engine.
std::vector<double> PrefillForEngine(const kvrt_model* model, const kvrt_engine_options& engine,
                                     const std::vector<uint32_t>& tokens, size_t vocabulary) {
  kvrt_cache* cache = nullptr;
  EXPECT_EQ(kvrt_cache_create_for_engine(model, 1, 0, &engine, &cache), nullptr);
  kvrt_session* session = nullptr;
  EXPECT_EQ(kvrt_session_bind(cache, model, &engine, &session), nullptr);
  const double* logits = nullptr;
  EXPECT_EQ(kvrt_session_prefill(session, tokens.data(), tokens.size(), &logits), nullptr);
  std::vector<double> out(logits, logits + vocabulary);
  kvrt_session_free(session);
  kvrt_cache_free(cache);
  return out;
}

TEST_F(CApiModelTest, AnF16CacheHalvesTheBytesWithinToleranceOfItsOracle) {
  kvrt_engine_options f32 = kvrt_engine_options_default();
  f32.threads = 1;
  EXPECT_EQ(f32.kv_type, KVRT_KV_TYPE_ENGINE);  // 0, also an initializer without the field
  kvrt_engine_options f16 = f32;
  f16.kv_type = KVRT_KV_TYPE_F16;
  kvrt_engine_options oracle = f16;
  oracle.backend = KVRT_BACKEND_REFERENCE;
  oracle.precision = KVRT_PRECISION_F64;
  const std::vector<uint32_t> tokens = {1, 5, 9, 2, 7, 3, 3, 8};
  const std::vector<double> got = PrefillForEngine(model_, f16, tokens, vocabulary_);
  const std::vector<double> want = PrefillForEngine(model_, oracle, tokens, vocabulary_);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  EXPECT_LE(worst, 1e-4);
  EXPECT_NE(got, PrefillForEngine(model_, f32, tokens, vocabulary_)) << "the f16 cache did not round";
  kvrt_cache* wide = nullptr;
  kvrt_cache* narrow = nullptr;
  ASSERT_EQ(kvrt_cache_create_for_engine(model_, 1, 16, &f32, &wide), nullptr);
  ASSERT_EQ(kvrt_cache_create_for_engine(model_, 1, 16, &f16, &narrow), nullptr);
  EXPECT_EQ(kvrt_cache_bytes(narrow) * 2, kvrt_cache_bytes(wide));
  // An f32 cache does not bind to an f16 engine; an unknown type is refused.
  kvrt_session* session = nullptr;
  kvrt_error* error = kvrt_session_bind(wide, model_, &f16, &session);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(kvrt_error_code(error), KVRT_ERR_UNSUPPORTED_BACKEND) << kvrt_error_message(error);
  kvrt_error_free(error);
  kvrt_engine_options bad = f32;
  bad.kv_type = static_cast<kvrt_kv_type>(9);
  kvrt_cache* none = nullptr;
  error = kvrt_cache_create_for_engine(model_, 1, 16, &bad, &none);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(kvrt_error_code(error), KVRT_ERR_INVALID_ARGUMENT) << kvrt_error_message(error);
  EXPECT_EQ(none, nullptr);
  kvrt_error_free(error);
  // bf16: the same bytes as f16, its own oracle, its own rounding.
  kvrt_engine_options bf16 = f16;
  bf16.kv_type = KVRT_KV_TYPE_BF16;
  kvrt_engine_options bf16_oracle = oracle;
  bf16_oracle.kv_type = KVRT_KV_TYPE_BF16;
  const std::vector<double> bf16_got = PrefillForEngine(model_, bf16, tokens, vocabulary_);
  const std::vector<double> bf16_want = PrefillForEngine(model_, bf16_oracle, tokens, vocabulary_);
  ASSERT_EQ(bf16_got.size(), bf16_want.size());
  worst = 0;
  for (size_t i = 0; i < bf16_got.size(); ++i) worst = std::max(worst, std::fabs(bf16_got[i] - bf16_want[i]));
  EXPECT_LE(worst, 1e-4);
  EXPECT_NE(bf16_got, got) << "bf16 rounded as f16";
  kvrt_cache* bf16_cache = nullptr;
  ASSERT_EQ(kvrt_cache_create_for_engine(model_, 1, 16, &bf16, &bf16_cache), nullptr);
  EXPECT_EQ(kvrt_cache_bytes(bf16_cache), kvrt_cache_bytes(narrow));
  kvrt_cache_free(bf16_cache);
  kvrt_cache_free(wide);
  kvrt_cache_free(narrow);
}

TEST_F(CApiModelTest, LogitsComeAsFloatToo) {
  const kvrt_engine_options engine = kvrt_engine_options_default();  // f32
  kvrt_cache* wide_cache = nullptr;
  kvrt_cache* narrow_cache = nullptr;
  ASSERT_EQ(kvrt_cache_create(model_, 0, engine.precision, &wide_cache), nullptr);
  ASSERT_EQ(kvrt_cache_create(model_, 0, engine.precision, &narrow_cache), nullptr);
  kvrt_session* wide = nullptr;
  kvrt_session* narrow = nullptr;
  ASSERT_EQ(kvrt_session_bind(wide_cache, model_, &engine, &wide), nullptr);
  ASSERT_EQ(kvrt_session_bind(narrow_cache, model_, &engine, &narrow), nullptr);
  const uint32_t prompt[] = {1, 7, 3};
  const double* wide_logits = nullptr;
  const float* narrow_logits = nullptr;
  ASSERT_EQ(kvrt_session_prefill(wide, prompt, 3, &wide_logits), nullptr);
  ASSERT_EQ(kvrt_session_prefill_f32(narrow, prompt, 3, &narrow_logits), nullptr);
  for (size_t i = 0; i < vocabulary_; ++i) ASSERT_EQ(narrow_logits[i], static_cast<float>(wide_logits[i])) << i;
  ASSERT_EQ(kvrt_session_decode(wide, 4, &wide_logits), nullptr);
  ASSERT_EQ(kvrt_session_decode_f32(narrow, 4, &narrow_logits), nullptr);
  for (size_t i = 0; i < vocabulary_; ++i) ASSERT_EQ(narrow_logits[i], static_cast<float>(wide_logits[i])) << i;
  // A failed step reports its error and leaves the output alone.
  const float* untouched = nullptr;
  kvrt_error* error = kvrt_session_decode_f32(narrow, 1u << 30, &untouched);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(untouched, nullptr);
  kvrt_error_free(error);
  kvrt_session_free(wide);
  kvrt_session_free(narrow);
  kvrt_cache_free(wide_cache);
  kvrt_cache_free(narrow_cache);
}

}  // namespace
}  // namespace kvrt
