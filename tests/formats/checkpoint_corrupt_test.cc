// The 51 mutated files of fixtures/corrupt against the reference's verdicts:
// accept or reject, and for a rejection the exact Rust Debug and Display text.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "formats_test_support.h"
#include "formats/llmcp35/checkpoint.h"

namespace kvrt {
namespace {

struct Verdict {
  std::string file;
  bool accepted = false;
  std::string debug;
  std::string display;
};

std::vector<Verdict> ReadVerdicts() {
  std::vector<Verdict> verdicts;
  for (const std::string& line :
       testing::Lines(testing::ReadText(testing::FixturePath("corrupt/verdicts.tsv")))) {
    if (line.empty()) continue;
    std::vector<std::string> columns;
    size_t begin = 0;
    while (true) {
      const size_t tab = line.find('\t', begin);
      columns.push_back(
          line.substr(begin, tab == std::string::npos ? std::string::npos : tab - begin));
      if (tab == std::string::npos) break;
      begin = tab + 1;
    }
    Verdict verdict;
    verdict.file = columns.at(0);
    verdict.accepted = columns.at(1) == "OK";
    if (!verdict.accepted) {
      verdict.debug = columns.at(2);
      verdict.display = columns.at(3);
    }
    verdicts.push_back(verdict);
  }
  return verdicts;
}

TEST(CorruptCheckpointTest, EveryVerdictMatchesTheReference) {
  const std::vector<Verdict> verdicts = ReadVerdicts();
  ASSERT_EQ(verdicts.size(), 51u);
  size_t rejected = 0;
  for (const Verdict& verdict : verdicts) {
    SCOPED_TRACE(verdict.file);
    const Result<Checkpoint> checkpoint =
        LoadCheckpoint(testing::FixturePath("corrupt/" + verdict.file));
    if (verdict.accepted) {
      EXPECT_TRUE(checkpoint.has_value()) << checkpoint.error().Debug();
      continue;
    }
    ++rejected;
    ASSERT_FALSE(checkpoint.has_value());
    EXPECT_EQ(checkpoint.error().Debug(), verdict.debug);
    EXPECT_EQ(checkpoint.error().message(), verdict.display);
  }
  EXPECT_EQ(rejected, 49u);
}

TEST(CorruptCheckpointTest, AcceptedVectorsCarryTheirMutation) {
  const Result<Checkpoint> steps = LoadCheckpoint(
      testing::FixturePath("corrupt/35_ACCEPTED_selected_and_optimizer_step_9.ckpt"));
  ASSERT_TRUE(steps) << steps.error().Debug();
  EXPECT_EQ(steps->selected_step, 9u);
  EXPECT_EQ(steps->optimizer.step, 9u);

  const Result<Checkpoint> bpe =
      LoadCheckpoint(testing::FixturePath("corrupt/51_ACCEPTED_bpe_rank7_becomes_256_257.ckpt"));
  ASSERT_TRUE(bpe) << bpe.error().Debug();
  ASSERT_EQ(bpe->tokenizer.merges().size(), 8u);
  EXPECT_EQ(bpe->tokenizer.merges()[7], (std::pair<uint32_t, uint32_t>{256, 257}));
  // Rank 7 now expands to the bytes of ranks 0 and 1: 20 d0 + d0 b0.
  const Result<std::string_view> bytes = bpe->tokenizer.TokenBytes(265);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(testing::HexOf(*bytes), "20d0d0b0");
}

}  // namespace
}  // namespace kvrt
