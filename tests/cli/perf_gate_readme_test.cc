// README's performance table and bench/perf_gate.json describe one gate: every
// floor the gate file enforces (its minimum, and for a baseline the baseline and
// the fraction 1 - tolerance it may drop to) is written in the table's CI column.
// Once the table promised "≥ 1.7×" for thread scaling while the gate let 1.2× pass.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

#include "test_support.h"

namespace kvrt {
namespace {

using Json = nlohmann::json;

std::string Formatted(const char* format, double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

TEST(PerfGateReadmeTest, TheTableStatesEveryFloorTheGateEnforces) {
  const std::string readme_text = testing::ReadText(testing::FixturePath("../README.md"));
  const size_t begin = readme_text.find("## Performance");
  ASSERT_NE(begin, std::string::npos);
  const std::string table = readme_text.substr(begin, readme_text.find("\n## ", begin + 1) - begin);
  const Json gate = Json::parse(testing::ReadText(testing::FixturePath("../bench/perf_gate.json")));
  ASSERT_FALSE(gate.at("ratios").empty());
  for (const Json& ratio : gate.at("ratios")) {
    const std::string name = ratio.at("name").get<std::string>();
    const double minimum = ratio.value("minimum", 0.0);
    if (minimum > 0) {
      EXPECT_NE(table.find(Formatted("%g", minimum)), std::string::npos) << name << ": minimum " << minimum;
    }
    if (ratio.contains("baseline")) {
      const double baseline = ratio.at("baseline").get<double>();
      const double kept = 1.0 - ratio.value("tolerance", 0.10);
      EXPECT_NE(table.find(Formatted("%g", baseline)), std::string::npos) << name << ": baseline " << baseline;
      EXPECT_NE(table.find(Formatted("%.2f", kept) + " ×"), std::string::npos) << name << ": kept " << kept;
    }
  }
}

}  // namespace
}  // namespace kvrt
