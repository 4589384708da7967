// The seed-38 ch38 fixture model (spec/model.md §10.5) against
// fixtures/model/ch38_fixture_check.txt: parameters, RNG state, RoPE tables, every
// intermediate activation and the logits, all bit for bit.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "model/decoder_model.h"
#include "model/rope.h"
#include "engine/reference/complete_prefix.h"
#include "test_support.h"

namespace kvrt {
namespace {

using testing::BitsOf;

class FixtureModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lines_ =
        testing::Lines(testing::ReadText(testing::FixturePath("model/ch38_fixture_check.txt")));
    ASSERT_GT(lines_.size(), 100u);
    SplitMix64 rng(38);
    Result<DecoderModel> model =
        DecoderModel::FromSeed(ModelConfig::Create(5, 4, 2, 4, 2, 4, 10000.0, 1e-6), rng);
    ASSERT_TRUE(model) << model.error().message();
    model_ = std::make_unique<DecoderModel>(std::move(*model));
    rng_state_ = rng.state();
  }

  // The lines between "## <heading...>" and the next heading.
  std::vector<std::string> Section(const std::string& heading_prefix) const {
    std::vector<std::string> out;
    bool inside = false;
    for (const std::string& line : lines_) {
      if (line.rfind("## ", 0) == 0) {
        inside = line.rfind("## " + heading_prefix, 0) == 0;
        continue;
      }
      if (inside && !line.empty()) out.push_back(line);
    }
    return out;
  }

  std::vector<std::string> lines_;
  std::unique_ptr<DecoderModel> model_;
  uint64_t rng_state_ = 0;
};

void ExpectBitsEqual(const std::vector<double>& expected, const std::vector<double>& actual,
                     const std::string& what) {
  ASSERT_EQ(expected.size(), actual.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(BitsOf(expected[i]), BitsOf(actual[i])) << what << " element " << i;
  }
}

TEST_F(FixtureModelTest, AllParametersAndTheRngStateAreBitExact) {
  EXPECT_EQ(rng_state_, 0xcce004cd52fe442aull);
  const std::vector<std::string> section = Section("full parameter bit patterns");
  ASSERT_EQ(section.size(), 20u);
  size_t scalars = 0;
  for (size_t i = 0; i < section.size(); ++i) {
    const std::string name = section[i].substr(0, section[i].find(" = "));
    const Parameter& parameter = model_->parameter(i);
    EXPECT_EQ(parameter.name(), name);
    EXPECT_EQ(parameter.revision(), 0u);
    const std::vector<double> expected = testing::ParseList(section[i]);
    ExpectBitsEqual(expected, {parameter.values().begin(), parameter.values().end()}, name);
    scalars += expected.size();
  }
  EXPECT_EQ(scalars, 264u);
}

TEST_F(FixtureModelTest, RopeTablesMatch) {
  const std::vector<std::string> section = Section("RoPE tables");
  ASSERT_EQ(section.size(), 3u);
  const RopeTable& rope = model_->rope();
  ExpectBitsEqual(testing::ParseList(section[0]),
                  {rope.inverse_frequencies().begin(), rope.inverse_frequencies().end()}, "inv_f");
  std::vector<double> cos, sin;
  for (size_t p = 0; p < 4; ++p) {
    cos.push_back(rope.cos(p)[0]);
    sin.push_back(rope.sin(p)[0]);
  }
  ExpectBitsEqual(testing::ParseList(section[1]), cos, "cos");
  ExpectBitsEqual(testing::ParseList(section[2]), sin, "sin");
}

TEST_F(FixtureModelTest, CompletePrefixLogitsAreBitExact) {
  for (const auto& [heading, tokens] : std::vector<std::pair<std::string, std::vector<uint32_t>>>{
           {"complete-prefix logits for prompt [0, 1]", {0, 1}},
           {"complete-prefix logits for prompt [0, 1, 2]", {0, 1, 2}}}) {
    const std::vector<std::string> section = Section(heading);
    std::map<std::string, std::string> fields;
    for (const std::string& line : section) fields[line.substr(0, line.find(' '))] = line;
    const size_t shape[2] = {1, tokens.size()};
    Result<std::vector<double>> all = ForwardCompletePrefix(*model_, tokens, shape);
    ASSERT_TRUE(all) << all.error().message();
    ExpectBitsEqual(
        testing::ParseList(fields["all_positions"].substr(fields["all_positions"].find('='))), *all,
        heading + " all positions");
    Result<std::vector<double>> last = LastLogitsCompletePrefix(*model_, tokens);
    ASSERT_TRUE(last);
    ExpectBitsEqual(testing::ParseList(fields["last_row_bits"]), *last, heading + " last row");
  }
}

TEST_F(FixtureModelTest, FullContextLogitsAndCausality) {
  // spec/model.md §10.5: T = P and the unchanged first row.
  const std::vector<double> expected = {-0.7938159485228067, -1.0575031487285453,
                                        -0.2398697921105893, 1.0148138338363495,
                                        -0.2853362558719182};
  const std::vector<double> row0 = {1.9255976779835593, 0.056144431315172882, 1.0351865384931089,
                                    -0.32713397845154768, 0.35911979154042023};
  const std::vector<uint32_t> tokens = {0, 1, 2, 3};
  const size_t shape[2] = {1, 4};
  Result<std::vector<double>> all = ForwardCompletePrefix(*model_, tokens, shape);
  ASSERT_TRUE(all);
  ExpectBitsEqual(expected, std::vector<double>(all->end() - 5, all->end()), "T = P last row");
  ExpectBitsEqual(row0, std::vector<double>(all->begin(), all->begin() + 5), "row 0");
}

TEST_F(FixtureModelTest, EveryIntermediateActivationIsBitExact) {
  ForwardTrace trace;
  const std::vector<uint32_t> tokens = {0, 1, 2};
  const size_t shape[2] = {1, 3};
  ASSERT_TRUE(ForwardCompletePrefix(*model_, tokens, shape, &trace));
  const std::vector<std::string> section = Section("intermediate activations");
  ASSERT_EQ(section.size(), 30u);  // embedding, 13 stages per block, final norm (2), logits
  for (const std::string& line : section) {
    const std::string name = line.substr(0, line.find(' '));
    const ForwardTrace::Stage* stage = trace.Find(name);
    ASSERT_NE(stage, nullptr) << name;
    const size_t values_at = line.find("values=");
    const std::vector<double> expected_shape = testing::ParseList(line.substr(0, values_at));
    ASSERT_EQ(expected_shape.size(), stage->shape.size()) << name;
    for (size_t i = 0; i < expected_shape.size(); ++i) {
      EXPECT_EQ(static_cast<size_t>(expected_shape[i]), stage->shape[i]) << name;
    }
    ExpectBitsEqual(testing::ParseList(line.substr(values_at)), stage->values, name);
  }
}

TEST_F(FixtureModelTest, InputValidationOrder) {
  auto error_of = [&](std::vector<uint32_t> ids, std::vector<size_t> shape) {
    Result<std::vector<double>> result = ForwardCompletePrefix(*model_, ids, shape);
    return result ? std::string("ok") : result.error().Debug();
  };
  EXPECT_EQ(error_of({0}, {1}), "TokenRank { rank: 1 }");
  EXPECT_EQ(error_of({}, {0, 1}), "EmptyBatch");
  EXPECT_EQ(error_of({}, {1, 0}), "EmptyTokens");
  EXPECT_EQ(error_of({0, 9, 0, 0, 0}, {1, 5}),
            "ContextLengthExceeded { tokens: 5, max_positions: 4 }");
  EXPECT_EQ(error_of({0, 1, 2}, {1, 2}), "TokenCountMismatch { expected: 2, actual: 3 }");
  EXPECT_EQ(error_of({0, 5}, {1, 2}),
            "Embedding(TokenIdOutOfBounds { position: 1, id: 5, vocabulary_size: 5 })");
  Result<std::vector<double>> bad =
      ForwardCompletePrefix(*model_, std::vector<uint32_t>{0, 5}, std::vector<size_t>{1, 2});
  EXPECT_EQ(
      bad.error().message(),
      "token embedding: token ID 5 at flat position 1 is out of bounds for vocabulary size 5");
}

TEST(ModelSeedTest, FailedConstructionLeavesTheGeneratorUntouched) {
  SplitMix64 rng(38);
  Result<DecoderModel> model =
      DecoderModel::FromSeed(ModelConfig::Create(5, 4, 3, 4, 1, 4, 1e4, 1e-6), rng);
  ASSERT_FALSE(model);
  EXPECT_EQ(rng.state(), 38u);
  // On success the generator advanced by exactly the number of draws.
  ASSERT_TRUE(DecoderModel::FromSeed(ModelConfig::Create(5, 4, 2, 4, 2, 4, 1e4, 1e-6), rng));
  EXPECT_EQ(rng.state(), 38u + 244u * SplitMix64::kGamma);
}

}  // namespace
}  // namespace kvrt
