// Allocation faults in model construction, parameter updates and checkpoint
// loading, and sizes that must be refused before anything is allocated: cache
// geometries whose element or byte count overflows size_t, and checkpoints that
// declare a context the RoPE tables cannot hold.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "core/allocation_faults.h"
#include "failing_allocator.h"
#include "fault_state.h"
#include "fault_sweep.h"
#include "formats/llmcp35/checkpoint.h"
#include "test_support.h"

namespace kvrt {
namespace {

using testing::AllocationHook;
using testing::FaultCase;
using testing::Sweep;

TEST(ModelFaultTest, FromSeedRebuildAndUpdate) {
  for (bool grouped : {false, true}) {
    const ModelConfig config = testing::FaultConfig(grouped);
    const std::string suffix = grouped ? "(grouped)" : "(ch38 geometry)";
    FaultCase seed;
    SplitMix64 rng(38);
    seed.name = "DecoderModel::FromSeed" + suffix;
    seed.prepare = [&] { rng = SplitMix64(38); };
    seed.run = [&]() -> std::optional<Error> {
      Result<DecoderModel> model = DecoderModel::FromSeed(config, rng);
      if (!model) return model.error();
      return std::nullopt;
    };
    seed.expect_unchanged = [&] { EXPECT_EQ(rng.state(), 38u) << "a failed build consumed draws"; };
    for (AllocationHook hook : testing::kAllocationHooks) Sweep(seed, hook);

    std::optional<DecoderModel> model;
    testing::ParameterState state;
    std::vector<std::vector<double>> values;
    FaultCase rebuild;
    rebuild.name = "DecoderModel::RebuildFromValues" + suffix;
    rebuild.prepare = [&] {
      model.emplace(testing::FaultModel(grouped));
      state = testing::StateOf(*model);
    };
    rebuild.run = [&]() -> std::optional<Error> {
      Result<DecoderModel> copy = model->RebuildFromValues();
      if (!copy) return copy.error();
      return std::nullopt;
    };
    rebuild.expect_unchanged = [&] { EXPECT_EQ(testing::StateOf(*model), state); };
    for (AllocationHook hook : testing::kAllocationHooks) Sweep(rebuild, hook);

    FaultCase update;
    update.name = "DecoderModel::UpdateParameters" + suffix;
    std::vector<ParameterUpdate> updates;
    update.prepare = [&] {
      model.emplace(testing::FaultModel(grouped));
      state = testing::StateOf(*model);
      values = testing::ValuesOf(*model);
      updates = {{1, values[1]}, {3, values[3]}};
      for (ParameterUpdate& u : updates) {
        for (double& v : u.values) v *= 0.5;
      }
    };
    update.run = [&]() -> std::optional<Error> {
      Result<void> updated = model->UpdateParameters(updates);
      if (!updated) return updated.error();
      return std::nullopt;
    };
    update.expect_unchanged = [&] {
      EXPECT_EQ(testing::StateOf(*model), state);
      EXPECT_EQ(testing::ValuesOf(*model), values);
    };
    update.expect_succeeded = [&] {
      EXPECT_EQ(model->parameter(1).revision(), 1u);
      EXPECT_EQ(model->parameter(3).revision(), 1u);
    };
    for (AllocationHook hook : testing::kAllocationHooks) Sweep(update, hook);
  }
}

TEST(ModelFaultTest, LoadAndBuildCheckpoint) {
  const std::string path = testing::FixturePath("checkpoints/ch38_loaded.ckpt");
  FaultCase load;
  load.name = "LoadCheckpoint+BuildModel(ch38_loaded)";
  load.prepare = [] {};
  load.run = [&]() -> std::optional<Error> {
    Result<Checkpoint> checkpoint = LoadCheckpoint(path);
    if (!checkpoint) return checkpoint.error();
    Result<DecoderModel> model = checkpoint->BuildModel();
    if (!model) return model.error();
    return std::nullopt;
  };
  load.expect_unchanged = [] {};
  for (AllocationHook hook : testing::kAllocationHooks) Sweep(load, hook);
}

// spec/kv-cache.md §1.1 step 4: ((B·H)·cap)·hw, and the bytes of that many
// elements, are checked before any allocation.
TEST(SizeLimitTest, CacheSizesThatOverflowAreRejectedBeforeAllocating) {
  const DecoderModel model = testing::FaultModel(false);  // H = 2, hw = 2, P = 4
  struct Case {
    size_t batch;
    Precision precision;
  };
  const size_t max = std::numeric_limits<size_t>::max();
  for (const Case& c : {Case{max, Precision::kF64},          // B·H overflows
                        Case{max / 4 + 1, Precision::kF32},    // ·cap overflows
                        Case{size_t{1} << 58, Precision::kF64},  // 2^62 elements, 2^65 bytes
                        Case{size_t{1} << 59, Precision::kF32}}) {  // 2^63 elements, 2^65 bytes
    CacheOptions options;
    options.batch_size = c.batch;
    options.precision = c.precision;
    const uint64_t aligned_before = memory::AllocationCallsOnThisThread();
    Result<DecoderKvCache> cache = DecoderKvCache::Create(model, options);
    ASSERT_FALSE(cache);
    EXPECT_EQ(cache.error().code(), ErrorCode::kLayerCache) << cache.error().Debug();
    EXPECT_EQ(cache.error().innermost(), ErrorCode::kElementCountOverflow) << cache.error().Debug();
    EXPECT_EQ(cache.error().U64("layer"), 0u);
    EXPECT_EQ(memory::AllocationCallsOnThisThread(), aligned_before) << "allocated before refusing";
  }
}

TEST(SizeLimitTest, ACacheTooLargeForMemoryIsATypedError) {
  const DecoderModel model = testing::FaultModel(false);
  CacheOptions options;
  options.batch_size = size_t{1} << 40;  // 2^40·2·4·2 f64 = 128 TiB: fits size_t, not memory
  options.precision = Precision::kF64;
  Result<DecoderKvCache> cache = DecoderKvCache::Create(model, options);
  ASSERT_FALSE(cache);
  EXPECT_EQ(cache.error().Debug(),
            "LayerCache { layer: 0, source: AllocationFailed { elements: 17592186044416 } }");
}

// A checkpoint's context length only sizes the RoPE tables (and later caches),
// never a tensor in the file, so a small file can claim any context: the reader
// must refuse a table past RopeTable::kMaxEntries without building it.
TEST(SizeLimitTest, ACheckpointClaimingAHugeContextIsRejectedBeforeAllocating) {
  std::vector<uint8_t> file = testing::ReadBytes(testing::FixturePath("checkpoints/ch38_loaded.ckpt"));
  constexpr size_t kMaxPositionsAt = 107;  // spec/checkpoint.md §4 (head width 2: one pair)
  for (uint64_t positions : {(uint64_t{1} << 28) + 1, uint64_t{1} << 40, ~uint64_t{0}}) {
    std::vector<uint8_t> bytes = file;
    for (int i = 0; i < 8; ++i) bytes[kMaxPositionsAt + i] = static_cast<uint8_t>(positions >> (8 * i));
    const uint64_t checksum = CheckpointChecksum(bytes);
    for (int i = 0; i < 8; ++i) bytes[30 + i] = static_cast<uint8_t>(checksum >> (8 * i));
    const uint64_t aligned_before = memory::AllocationCallsOnThisThread();
    Result<Checkpoint> checkpoint = ParseCheckpoint(bytes);
    ASSERT_FALSE(checkpoint) << positions;
    EXPECT_TRUE(checkpoint.error().Has(ErrorCode::kSizeOverflow)) << checkpoint.error().Debug();
    EXPECT_EQ(memory::AllocationCallsOnThisThread(), aligned_before);
  }
}

}  // namespace
}  // namespace kvrt
