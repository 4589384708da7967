// The reference forward's trace: the sink the steps report to (nothing happens
// without a trace, head tensors are regathered into [batch, heads, rows, hw], a
// stage filled piecewise appears only once closed), and a batched, grouped-query
// trace whose every stage holds each sequence's own single-sequence trace.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/reference/complete_prefix.h"
#include "engine/reference/trace_sink.h"
#include "model/decoder_model.h"
#include "kvrt/rng.h"

namespace kvrt::detail {
namespace {

bool SameBits(const double* a, const double* b, size_t n) {
  return std::memcmp(a, b, n * sizeof(double)) == 0;
}

TEST(TraceSinkTest, WithoutATraceNothingIsComputedOrRecorded) {
  TraceSink sink(nullptr);
  EXPECT_FALSE(sink.enabled());
  bool evaluated = false;
  const double values[4] = {1, 2, 3, 4};
  sink.EnterBlock(3);
  sink.Record("stage", {1}, [&] {
    evaluated = true;
    return std::vector<double>{0.0};
  });
  sink.Rows("rows", 1, 2, 2, values);
  sink.Heads("heads", 1, 2, 1, 2, values);
  sink.Open("open", {1, 4}, 4);
  sink.Fill(2, values, 2);
  sink.Close();
  sink.LeaveBlocks();
  EXPECT_FALSE(evaluated);
}

TEST(TraceSinkTest, NamesCarryTheBlockAndHeadsAreRegathered) {
  ForwardTrace trace;
  TraceSink sink(&trace);
  // [batch 2, rows 3, heads 2, hw 2]: element (b, r, h, k) holds b·1000 + r·100 + h·10 + k.
  std::vector<double> rows;
  for (int b = 0; b < 2; ++b)
    for (int r = 0; r < 3; ++r)
      for (int h = 0; h < 2; ++h)
        for (int k = 0; k < 2; ++k) rows.push_back(b * 1000 + r * 100 + h * 10 + k);
  sink.Rows("embedding", 2, 3, 4, rows.data());
  sink.EnterBlock(1);
  sink.Heads("attention.projected_query_heads", 2, 3, 2, 2, rows.data());
  sink.LeaveBlocks();
  sink.Record("logits", {2, 3, 4}, [&] { return rows; });

  ASSERT_EQ(trace.stages.size(), 3u);
  EXPECT_EQ(trace.stages[0].name, "embedding");
  EXPECT_EQ(trace.stages[0].shape, (std::vector<size_t>{2, 3, 4}));
  EXPECT_EQ(trace.stages[0].values, rows);
  const ForwardTrace::Stage& heads = trace.stages[1];
  EXPECT_EQ(heads.name, "blocks.1.attention.projected_query_heads");
  EXPECT_EQ(heads.shape, (std::vector<size_t>{2, 2, 3, 2}));
  std::vector<double> expected;
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 2; ++h)
      for (int r = 0; r < 3; ++r)
        for (int k = 0; k < 2; ++k) expected.push_back(b * 1000 + r * 100 + h * 10 + k);
  EXPECT_EQ(heads.values, expected);
  EXPECT_EQ(trace.stages[2].name, "logits");
}

TEST(TraceSinkTest, AnOpenStageIsRecordedOnlyWhenClosed) {
  ForwardTrace trace;
  TraceSink sink(&trace);
  const double values[2] = {5, 6};
  sink.EnterBlock(0);
  sink.Open("attention.weights", {1, 1, 2, 2}, 4);
  sink.Fill(2, values, 2);
  EXPECT_TRUE(trace.stages.empty());  // a step failing here leaves no partial stage
  sink.Close();
  ASSERT_EQ(trace.stages.size(), 1u);
  EXPECT_EQ(trace.stages[0].name, "blocks.0.attention.weights");
  EXPECT_EQ(trace.stages[0].shape, (std::vector<size_t>{1, 1, 2, 2}));
  EXPECT_EQ(trace.stages[0].values, (std::vector<double>{0, 0, 5, 6}));
}

// Every stage is [batch, ...] with sequences contiguous, and the reference treats
// the sequences of a batch independently: sequence b's slice of each stage of a
// batch-2 trace has the bits of its own batch-1 trace. Grouped-query attention
// (2 query heads per kv head) and an untied head cover every step's layout.
TEST(ForwardTraceTest, EachSequenceOfABatchTracesAsIfAlone) {
  ModelConfig config = ModelConfig::Create(11, 16, 4, 24, 2, 8, 10000.0, 1e-5);
  config.kv_heads = 2;
  config.tied_output = false;
  SplitMix64 rng(36);
  Result<DecoderModel> model = DecoderModel::FromSeed(config, rng);
  ASSERT_TRUE(model) << model.error().message();
  const std::vector<std::vector<uint32_t>> sequences = {{3, 1, 4, 1, 5}, {9, 2, 6, 5, 3}};
  std::vector<uint32_t> both = sequences[0];
  both.insert(both.end(), sequences[1].begin(), sequences[1].end());
  ForwardTrace batched;
  const size_t batch_shape[2] = {2, 5};
  ASSERT_TRUE(ForwardCompletePrefix(*model, both, batch_shape, &batched));
  ASSERT_EQ(batched.stages.size(), 1u + 13u * config.layers + 3u);

  for (size_t b = 0; b < sequences.size(); ++b) {
    ForwardTrace alone;
    const size_t shape[2] = {1, 5};
    ASSERT_TRUE(ForwardCompletePrefix(*model, sequences[b], shape, &alone));
    ASSERT_EQ(alone.stages.size(), batched.stages.size());
    for (size_t s = 0; s < alone.stages.size(); ++s) {
      const ForwardTrace::Stage& one = alone.stages[s];
      const ForwardTrace::Stage& two = batched.stages[s];
      ASSERT_EQ(one.name, two.name);
      std::vector<size_t> shape_of_one = two.shape;
      shape_of_one[0] = 1;
      EXPECT_EQ(one.shape, shape_of_one) << one.name;
      ASSERT_EQ(two.values.size(), 2 * one.values.size()) << one.name;
      const size_t size = one.values.size();
      EXPECT_TRUE(SameBits(one.values.data(), two.values.data() + b * size, size))
          << one.name << " of sequence " << b;
    }
  }
}

}  // namespace
}  // namespace kvrt::detail
