// Every case of fixtures/sampling/sampling_check.txt sections 1–3: SplitMix64
// streams, distributions, the 21 chained calls, the edge cases and the errors,
// compared bit for bit (spec/sampling.md).
#include "kvrt/sampling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "allocation_counter.h"
#include "kvrt/simd/softmax.h"
#include "sampling_check.h"

namespace kvrt {
namespace {

using testing::BitsOf;
using testing::CheckFloat;
using testing::CheckFloatList;
using testing::Fields;
using testing::Hex;

class SamplingCheckTest : public ::testing::Test {
 protected:
  void SetUp() override { lines_ = testing::SamplingCheckLines(); }

  // The logits of the first DIST block called `name`.
  std::vector<double> LogitsOf(const std::string& name) const {
    for (const std::string& line : lines_) {
      if (line.rfind("DIST " + name + " logits=", 0) == 0) return CheckFloatList(line);
    }
    ADD_FAILURE() << "no logits for " << name;
    return {};
  }

  std::vector<std::string> lines_;
};

TEST_F(SamplingCheckTest, SplitMix64StreamsAndUnitDraws) {
  size_t checked = 0;
  std::optional<SplitMix64> rng;
  for (const std::string& line : lines_) {
    if (line.rfind("SEED ", 0) == 0) rng.emplace(Hex(line.substr(5)));  // 0x-prefixed
    if (line.rfind("SM64 ", 0) == 0) {
      std::map<std::string, std::string> f = Fields(line);
      SplitMix64 copy = *rng;
      const uint64_t output = rng->NextU64();
      EXPECT_EQ(rng->state(), Hex(f["state"]));
      EXPECT_EQ(output, Hex(f["u64"]));
      EXPECT_EQ(output >> 11, Hex(f["top53"]));
      EXPECT_EQ(BitsOf(copy.NextUnit()), BitsOf(CheckFloat(f["unit"])));
      ++checked;
    }
    if (line.rfind("SM64_FINAL_STATE", 0) == 0) {
      EXPECT_EQ(rng->state(), Hex(Fields(line)["state"]));
    }
  }
  EXPECT_EQ(checked, 10u);
}

TEST_F(SamplingCheckTest, EveryDistributionIsBitExact) {
  size_t blocks = 0;
  for (size_t i = 0; i < lines_.size(); ++i) {
    if (lines_[i].rfind("DIST ", 0) != 0 || lines_[i].find(" mode: ") == std::string::npos)
      continue;
    const std::string name = lines_[i].substr(5, lines_[i].find(' ', 5) - 5);
    const SamplingMode mode = testing::ModeOf(lines_[i]);
    std::vector<double> logits;
    TokenDistribution expected;
    std::vector<double> expected_probabilities;
    for (size_t j = i + 1; j < lines_.size() && lines_[j].rfind("DIST " + name + " ", 0) == 0 &&
                           lines_[j].find(" mode: ") == std::string::npos;
         ++j) {
      const std::string rest = lines_[j].substr(6 + name.size());
      std::map<std::string, std::string> f = Fields(rest);
      if (rest.rfind("logits=", 0) == 0) logits = CheckFloatList(rest);
      if (rest.rfind("rank_order=", 0) == 0) expected.rank_order = testing::IdList(rest);
      if (rest.rfind("retained_in_rank_order=", 0) == 0) {
        expected.retained_in_rank_order = testing::IdList(rest);
      }
      if (rest.rfind("id=", 0) == 0) expected_probabilities.push_back(CheckFloat(f["probability"]));
      if (rest.rfind("interval ", 0) == 0) {
        expected.intervals.push_back({static_cast<uint32_t>(std::stoul(f["id"])),
                                      CheckFloat(f["start"]), CheckFloat(f["end"])});
      }
    }
    SplitMix64 rng(7);
    TokenDistribution actual;
    ASSERT_TRUE(SampleNextToken(logits, mode, rng, &actual)) << name;
    EXPECT_EQ(actual.rank_order, expected.rank_order) << name;
    EXPECT_EQ(actual.retained_in_rank_order, expected.retained_in_rank_order) << name;
    ASSERT_EQ(actual.probabilities.size(), expected_probabilities.size()) << name;
    for (size_t id = 0; id < expected_probabilities.size(); ++id) {
      EXPECT_EQ(BitsOf(actual.probabilities[id]), BitsOf(expected_probabilities[id]))
          << name << " id " << id;
    }
    // Greedy blocks list no intervals (the one-hot support is [0, 1)).
    if (mode.kind == SamplingMode::Kind::kGreedy) expected.intervals = actual.intervals;
    ASSERT_EQ(actual.intervals.size(), expected.intervals.size()) << name;
    for (size_t k = 0; k < expected.intervals.size(); ++k) {
      EXPECT_EQ(actual.intervals[k].token_id, expected.intervals[k].token_id) << name;
      EXPECT_EQ(BitsOf(actual.intervals[k].start), BitsOf(expected.intervals[k].start)) << name;
      EXPECT_EQ(BitsOf(actual.intervals[k].end), BitsOf(expected.intervals[k].end)) << name;
    }
    ++blocks;
  }
  EXPECT_EQ(blocks, 14u);  // 8 in section 2, 6 edge distributions in section 3
}

TEST_F(SamplingCheckTest, TwentyOneCallsShareOneGenerator) {
  SplitMix64 rng(0x9e3779b97f4a7c38ull);
  size_t calls = 0;
  for (const std::string& line : lines_) {
    if (line.rfind("CALL ", 0) != 0) continue;
    std::map<std::string, std::string> f = Fields(line);
    std::istringstream in(line);
    std::string word, index, vector;
    in >> word >> index >> vector;
    EXPECT_EQ(rng.state(), Hex(f["state_before"])) << line;
    Result<TokenSelection> selection =
        SampleNextToken(LogitsOf(vector), testing::ModeOf(line), rng);
    ASSERT_TRUE(selection) << line;
    EXPECT_EQ(selection->token_id, std::stoul(f["token"])) << line;
    if (f["draw"] == "none") {
      EXPECT_FALSE(selection->unit_draw.has_value());
    } else {
      ASSERT_TRUE(selection->unit_draw.has_value());
      EXPECT_EQ(BitsOf(*selection->unit_draw), BitsOf(CheckFloat(f["draw"])));
    }
    EXPECT_EQ(BitsOf(selection->interval_start), BitsOf(CheckFloat(f["start"]))) << line;
    EXPECT_EQ(BitsOf(selection->interval_end), BitsOf(CheckFloat(f["end"]))) << line;
    EXPECT_EQ(rng.state(), Hex(f["state_after"])) << line;
    ++calls;
  }
  EXPECT_EQ(calls, 21u);
  EXPECT_EQ(rng.state(), 0x5c55827df1d1b1c7ull);
}

// Lines "<KIND> seed=... token=... draw=... start=... end=... final_state=..." that
// sample once from the logits and mode of DIST <distribution>.
void CheckSingleDraws(const std::vector<std::string>& lines, const std::string& kind,
                      const std::vector<double>& logits, const SamplingMode& mode,
                      size_t expected) {
  size_t checked = 0;
  for (const std::string& line : lines) {
    if (line.rfind(kind + " ", 0) != 0) continue;
    std::map<std::string, std::string> f = Fields(line);
    SplitMix64 rng(Hex(f["seed"]));
    Result<TokenSelection> selection = SampleNextToken(logits, mode, rng);
    ASSERT_TRUE(selection) << line;
    EXPECT_EQ(selection->token_id, std::stoul(f["token"])) << line;
    EXPECT_EQ(BitsOf(*selection->unit_draw), BitsOf(CheckFloat(f["draw"]))) << line;
    EXPECT_EQ(BitsOf(selection->interval_start), BitsOf(CheckFloat(f["start"]))) << line;
    EXPECT_EQ(BitsOf(selection->interval_end), BitsOf(CheckFloat(f["end"]))) << line;
    EXPECT_EQ(rng.state(), Hex(f["final_state"])) << line;
    ++checked;
  }
  EXPECT_EQ(checked, expected) << kind;
}

TEST_F(SamplingCheckTest, EdgeCasesUnderflowBoundaryUniformCap) {
  const double min_positive = std::numeric_limits<double>::min();
  CheckSingleDraws(lines_, "UNDERFLOW", LogitsOf("UNDERFLOW"),
                   SamplingMode::TemperatureTopK(min_positive, 3), 1);
  CheckSingleDraws(lines_, "BOUNDARY", {2.0, 2.0, 1.0},
                   SamplingMode::TemperatureTopK(min_positive, 3), 4);
  CheckSingleDraws(lines_, "UNIFORM10", LogitsOf("UNIFORM10"),
                   SamplingMode::TemperatureTopK(1.0, 10), 2);
  CheckSingleDraws(lines_, "CAP", LogitsOf("CAP"), SamplingMode::TemperatureTopK(1.0, 3), 2);
}

TEST_F(SamplingCheckTest, Chapter36Fixture) {
  SplitMix64 rng(36);
  const std::vector<double> logits = LogitsOf("BOOK36");
  std::vector<uint32_t> tokens;
  for (const std::string& line : lines_) {
    if (line.rfind("BOOK36 draw ", 0) != 0) continue;
    std::map<std::string, std::string> f = Fields(line);
    Result<TokenSelection> selection =
        SampleNextToken(logits, SamplingMode::TemperatureTopK(1.0, 3), rng);
    ASSERT_TRUE(selection);
    EXPECT_EQ(selection->token_id, std::stoul(f["token"]));
    EXPECT_EQ(BitsOf(*selection->unit_draw), BitsOf(CheckFloat(f["draw"])));
    EXPECT_EQ(BitsOf(selection->interval_start), BitsOf(CheckFloat(f["start"])));
    EXPECT_EQ(BitsOf(selection->interval_end), BitsOf(CheckFloat(f["end"])));
    tokens.push_back(selection->token_id);
  }
  EXPECT_EQ(tokens, (std::vector<uint32_t>{3, 2, 2, 2, 3, 3, 3, 3}));
  EXPECT_EQ(rng.state(), 0xf1bbcdcbfa53e0ccull);
}

TEST_F(SamplingCheckTest, GreedyPrefersTheLowestIdAmongSignedZeros) {
  SplitMix64 rng(99);
  Result<TokenSelection> selection =
      SampleNextToken({{-0.0, 0.0, -1.0}}, SamplingMode::Greedy(), rng);
  ASSERT_TRUE(selection);
  EXPECT_EQ(selection->token_id, 0u);
  EXPECT_FALSE(selection->unit_draw.has_value());
  EXPECT_EQ(selection->interval_start, 0.0);
  EXPECT_EQ(selection->interval_end, 1.0);
  EXPECT_EQ(rng.state(), 99u);
}

// Greedy without a distribution takes a one-pass argmax instead of ranking the ids;
// it must pick the rank order's first id: values from a small set, so that the
// maximum is often shared (and ±0 ties) at any position.
TEST_F(SamplingCheckTest, GreedyArgmaxIsTheRankOrdersFirstId) {
  SplitMix64 values(7);
  for (size_t trial = 0; trial < 200; ++trial) {
    std::vector<double> logits(1 + trial % 37);
    for (double& logit : logits) {
      const double choices[] = {-0.0, 0.0, 1.5, -2.0, 1.5, 3.0};
      logit = choices[values.NextU64() % 6];
    }
    SplitMix64 rng(1), ranked_rng(1);
    TokenDistribution distribution;
    Result<TokenSelection> argmax = SampleNextToken(logits, SamplingMode::Greedy(), rng);
    Result<TokenSelection> ranked =
        SampleNextToken(logits, SamplingMode::Greedy(), ranked_rng, &distribution);
    ASSERT_TRUE(argmax && ranked);
    EXPECT_EQ(argmax->token_id, ranked->token_id) << "trial " << trial;
    EXPECT_EQ(argmax->token_id, distribution.rank_order.front());
    EXPECT_FALSE(argmax->unit_draw.has_value());
    EXPECT_EQ(argmax->interval_start, ranked->interval_start);
    EXPECT_EQ(argmax->interval_end, ranked->interval_end);
    EXPECT_EQ(rng.state(), 1u);
  }
}

TEST_F(SamplingCheckTest, EveryErrorKindLeavesTheGeneratorUnchanged) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    std::string name;
    std::vector<double> logits;
    SamplingMode mode;
  };
  const std::vector<Case> cases = {
      {"empty", {}, SamplingMode::TemperatureTopK(1.0, 1)},
      {"nan_logit_and_bad_mode", {0.0, nan}, SamplingMode::TemperatureTopK(0.0, 0)},
      {"neg_inf_logit_greedy", {-inf}, SamplingMode::Greedy()},
      {"temp_zero_and_k_zero", {0.0}, SamplingMode::TemperatureTopK(0.0, 0)},
      {"temp_neg_zero", {0.0}, SamplingMode::TemperatureTopK(-0.0, 1)},
      {"temp_nan", {0.0}, SamplingMode::TemperatureTopK(nan, 1)},
      {"temp_inf", {0.0}, SamplingMode::TemperatureTopK(inf, 1)},
      {"k_zero", {0.0}, SamplingMode::TemperatureTopK(1.0, 0)},
      {"k_too_big", {0.0}, SamplingMode::TemperatureTopK(1.0, 2)},
  };
  size_t checked = 0;
  for (const std::string& line : lines_) {
    if (line.rfind("ERROR ", 0) != 0) continue;
    const std::string name = line.substr(6, line.find(' ', 6) - 6);
    const std::string expected =
        line.substr(line.find("-> ") + 3, line.find(" rng_unchanged") - line.find("-> ") - 3);
    for (const Case& c : cases) {
      if (c.name != name) continue;
      SplitMix64 rng(1234);
      Result<TokenSelection> selection = SampleNextToken(c.logits, c.mode, rng);
      ASSERT_FALSE(selection) << name;
      EXPECT_EQ(selection.error().Debug(), expected) << name;
      EXPECT_EQ(rng.state(), 1234u) << name;
      ++checked;
    }
  }
  EXPECT_EQ(checked, cases.size());
}

TEST_F(SamplingCheckTest, SamplerAndGenericSoftmaxDifferAsRecorded) {
  size_t checked = 0;
  for (const std::string& line : lines_) {
    if (line.rfind("SOFTMAX_VS_SAMPLER ", 0) != 0) continue;
    const std::vector<double> logits = testing::ParseList(line.substr(0, line.find(" entries")));
    const std::string counts = Fields(line)["entries_with_different_bits"];
    std::vector<double> softmax(logits.size());
    simd::SoftmaxScalar(logits.data(), softmax.data(), logits.size());
    SplitMix64 rng(0);
    TokenDistribution distribution;
    ASSERT_TRUE(SampleNextToken(logits, SamplingMode::TemperatureTopK(1.0, logits.size()), rng,
                                &distribution));
    size_t different = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      if (BitsOf(softmax[i]) != BitsOf(distribution.probabilities[i])) ++different;
    }
    EXPECT_EQ(std::to_string(different) + "/" + std::to_string(logits.size()), counts);
    ++checked;
  }
  EXPECT_EQ(checked, 4u);
}

TEST(SamplerTest, SamplingAllocatesNothingOnceCreated) {
  Result<Sampler> sampler = Sampler::Create(1000);
  ASSERT_TRUE(sampler);
  std::vector<double> logits(1000);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<double>(i));
  SplitMix64 rng(5);
  const uint64_t before = testing::HeapAllocationsOnThisThread();
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(sampler->Sample(logits, SamplingMode::TemperatureTopK(0.9, 40), rng));
  EXPECT_EQ(testing::HeapAllocationsOnThisThread(), before);
}

}  // namespace
}  // namespace kvrt
