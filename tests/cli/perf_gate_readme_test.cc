// The gated-figures table of docs/performance/README.md and bench/perf_gate.json
// describe one gate: every floor the gate file enforces (its minimum, and for a
// baseline the baseline and the fraction 1 - tolerance it may drop to) is written
// in the table's CI column. Once the table promised "≥ 1.7×" for thread scaling
// while the gate let 1.2× pass.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "test_support.h"

namespace kvrt {
namespace {

using Json = nlohmann::json;

std::string Formatted(const char* format, double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

// The last cell of every row of the tables in `section`, one per line: the CI
// column of the gated-figures table.
std::string CiColumn(const std::string& section) {
  std::string column;
  size_t line_begin = 0;
  while (line_begin < section.size()) {
    size_t line_end = section.find('\n', line_begin);
    if (line_end == std::string::npos) line_end = section.size();
    const std::string line = section.substr(line_begin, line_end - line_begin);
    line_begin = line_end + 1;
    if (line.size() < 2 || line.front() != '|' || line.back() != '|') continue;
    const size_t cell_begin = line.rfind('|', line.size() - 2);
    column += line.substr(cell_begin + 1, line.size() - 2 - cell_begin) + "\n";
  }
  return column;
}

// Every decimal number written in `text` ("0.65", "14", "1.2").
std::vector<double> Numbers(const std::string& text) {
  std::vector<double> numbers;
  for (size_t i = 0; i < text.size();) {
    const size_t end = text.find_first_not_of("0123456789.", i);
    const size_t stop = end == std::string::npos ? text.size() : end;
    if (stop > i && text[i] != '.') numbers.push_back(std::strtod(text.substr(i, stop - i).c_str(), nullptr));
    i = stop == i ? i + 1 : stop;
  }
  return numbers;
}

bool Holds(const std::vector<double>& numbers, double value) {
  for (const double number : numbers) {
    if (std::fabs(number - value) <= 1e-9 * std::fabs(value)) return true;
  }
  return false;
}

TEST(PerfGateReadmeTest, TheTableStatesEveryFloorTheGateEnforces) {
  const std::string page = testing::ReadText(testing::FixturePath("../docs/performance/README.md"));
  const size_t begin = page.find("\n## The gated figures\n");
  ASSERT_NE(begin, std::string::npos);
  const std::string ci_column = CiColumn(page.substr(begin, page.find("\n## ", begin + 1) - begin));
  const std::vector<double> stated = Numbers(ci_column);
  ASSERT_FALSE(stated.empty());
  const Json gate = Json::parse(testing::ReadText(testing::FixturePath("../bench/perf_gate.json")));
  ASSERT_FALSE(gate.at("ratios").empty());
  for (const Json& ratio : gate.at("ratios")) {
    const std::string name = ratio.at("name").get<std::string>();
    const double minimum = ratio.value("minimum", 0.0);
    if (minimum > 0) {
      EXPECT_TRUE(Holds(stated, minimum)) << name << ": minimum " << minimum;
    }
    if (ratio.contains("baseline")) {
      const double baseline = ratio.at("baseline").get<double>();
      const double kept = 1.0 - ratio.value("tolerance", 0.10);
      EXPECT_TRUE(Holds(stated, baseline)) << name << ": baseline " << baseline;
      EXPECT_NE(ci_column.find(Formatted("%.2f", kept) + " ×"), std::string::npos) << name << ": kept " << kept;
    }
  }
}

}  // namespace
}  // namespace kvrt
