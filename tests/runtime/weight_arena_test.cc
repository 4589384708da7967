// The engine's weight matrices lie in one arena, back to back in the order a
// decode step reads them (weights/weight_arena.h), hold the same bytes as when each
// had a buffer of its own, and a model whose arena cannot be allocated still packs.
#include "weights/weight_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/allocation_faults.h"
#include "core/buffer.h"
#include "model/decoder_model.h"
#include "kvrt/weight_format.h"
#include "weights/engine_weights.h"

namespace kvrt {
namespace {

using detail::EngineWeights;
using detail::PackedWeight;

DecoderModel ArenaModel() {
  // D 64 and F 96 are multiples of 32, so q8_0/q4_0 keep every matrix (no fallback).
  SplitMix64 rng(77);
  return *DecoderModel::FromSeed(ModelConfig::Create(200, 64, 2, 96, 3, 40, 10000.0, 1e-5), rng);
}

template <class T>
const void* Data(const PackedWeight<T>& weight) {
  return weight.is_compressed() ? static_cast<const void*>(weight.compressed.view.data)
                                : static_cast<const void*>(weight.view.data);
}

template <class T>
size_t Bytes(const PackedWeight<T>& weight) {
  if (weight.is_compressed()) {
    return simd::CompressedMatrixBytes(weight.compressed.view.type, weight.compressed.view.rows,
                                       weight.compressed.view.cols);
  }
  return simd::PackedElementCount<T>(weight.view.rows, weight.view.cols) * sizeof(T);
}

// Every matrix in decode order: the blocks' seven, then the token table (tied head).
template <class T>
std::vector<const PackedWeight<T>*> StepOrder(const EngineWeights<T>& weights) {
  std::vector<const PackedWeight<T>*> order;
  for (const auto& block : weights.blocks) {
    for (const PackedWeight<T>* weight : {&block.query, &block.key, &block.value, &block.output,
                                          &block.gate, &block.up, &block.down}) {
      order.push_back(weight);
    }
  }
  order.push_back(&weights.embedding);
  return order;
}

template <class T>
void ExpectOneArenaInStepOrder(WeightFormat format) {
  const DecoderModel model = ArenaModel();
  Result<std::shared_ptr<const EngineWeights<T>>> packed =
      detail::PackEngineWeights<T>(model, format);
  ASSERT_TRUE(packed) << packed.error().message();
  const EngineWeights<T>& weights = **packed;
  ASSERT_NE(weights.arena.size(), 0u);
  const auto* begin = weights.arena.data();
  const auto* end = begin + weights.arena.size();
  const uint8_t* previous_end = begin;
  for (const PackedWeight<T>* weight : StepOrder(weights)) {
    const auto* data = static_cast<const uint8_t*>(Data(*weight));
    EXPECT_EQ(weight->owned.size(), 0u);
    EXPECT_EQ(weight->compressed.owned.size(), 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % kBufferAlignment, 0u);
    // Right after the previous matrix, up to the alignment.
    EXPECT_GE(data, previous_end);
    EXPECT_LT(data, previous_end + kBufferAlignment);
    previous_end = data + Bytes(*weight);
    EXPECT_LE(previous_end, end);
  }
}

TEST(WeightArenaTest, F32EngineMatricesLieInOneArenaInStepOrder) {
  for (WeightFormat format : {WeightFormat::kF32, WeightFormat::kBf16, WeightFormat::kF16,
                              WeightFormat::kQ8_0, WeightFormat::kQ4_0}) {
    SCOPED_TRACE(WeightFormatName(format));
    ExpectOneArenaInStepOrder<float>(format);
  }
}

TEST(WeightArenaTest, F64EngineMatricesLieInOneArenaInStepOrder) {
  ExpectOneArenaInStepOrder<double>(WeightFormat::kAsStored);
  ExpectOneArenaInStepOrder<double>(WeightFormat::kQ8_0);
}

// The arena is the packing's last runtime buffer: failing it alone leaves every
// matrix in its own buffer, with the same bytes.
TEST(WeightArenaTest, WithoutAnArenaEveryMatrixKeepsItsOwnBufferAndBytes) {
  const DecoderModel model = ArenaModel();
  for (WeightFormat format : {WeightFormat::kF32, WeightFormat::kQ8_0, WeightFormat::kQ4_0}) {
    SCOPED_TRACE(WeightFormatName(format));
    const uint64_t before = memory::AllocationCallsOnThisThread();
    auto gathered = detail::PackEngineWeights<float>(model, format);
    ASSERT_TRUE(gathered);
    const uint64_t calls = memory::AllocationCallsOnThisThread() - before;
    memory::FailAllocationsAfter(calls - 1);
    auto apart = detail::PackEngineWeights<float>(model, format);
    memory::ClearAllocationFailures();
    ASSERT_TRUE(apart) << apart.error().message();
    EXPECT_EQ((*apart)->arena.size(), 0u);
    const auto in_arena = StepOrder(**gathered), own = StepOrder(**apart);
    ASSERT_EQ(in_arena.size(), own.size());
    for (size_t i = 0; i < own.size(); ++i) {
      const void* owned = own[i]->is_compressed()
                              ? static_cast<const void*>(own[i]->compressed.owned.data())
                              : static_cast<const void*>(own[i]->owned.data());
      EXPECT_NE(owned, nullptr);
      EXPECT_EQ(Data(*own[i]), owned);
      ASSERT_EQ(Bytes(*own[i]), Bytes(*in_arena[i]));
      EXPECT_EQ(std::memcmp(Data(*own[i]), Data(*in_arena[i]), Bytes(*own[i])), 0)
          << "matrix " << i;
    }
  }
}

}  // namespace
}  // namespace kvrt
