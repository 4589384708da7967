// The bf16 dot probe (machine_limits.h) is the peak the kernel benchmarks and
// `kvrt bench` judge bf16 activations by; like the int8 probe's, its sum proves the
// work it counts was done. Each round adds two products 1·2^-24 to every lane, one
// rounded f32 addition each (VDPBF16PS's definition, and the portable form's two FMAs
// of exact products), so a scalar replay of the additions gives its chains' values bit
// for bit, and all lanes of a chain are equal.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "hwy/targets.h"
#include "kvrt/machine/machine_limits.h"

namespace kvrt::machine {
namespace {

constexpr size_t kChains = 16;
constexpr size_t kFlopsPerLane = 4;  // two products per 32-bit lane, 2 FLOPs each

// Σ_c of chain c after `rounds`, from 0.001·c, as the probe adds its chains up.
float ExpectedChainTotal(size_t rounds) {
  float total = 0.0f;
  for (size_t c = 0; c < kChains; ++c) {
    volatile float acc = 0.001f * static_cast<float>(c);
    for (size_t i = 0; i < rounds; ++i) {
      acc = acc + 0x1p-24f;
      acc = acc + 0x1p-24f;
    }
    total = total + acc;
  }
  return total;
}

TEST(Bf16DotProbeTest, EveryTargetRunsTheOperationsItCounts) {
  constexpr size_t kRounds = 5'003;
  const float total = ExpectedChainTotal(kRounds);
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    float sink = 0;
    const size_t flops = RunBf16DotProbe(kRounds, &sink);
    const size_t per_round = kChains * kFlopsPerLane;
    ASSERT_EQ(flops % (kRounds * per_round), 0u) << hwy::TargetName(target);
    const size_t lanes = flops / (kRounds * per_round);
    EXPECT_TRUE(lanes == 1 || lanes == 4 || lanes == 8 || lanes == 16) << hwy::TargetName(target) << " " << lanes;
    // Equal lanes: their sum is the chain total times the lane count, exactly.
    EXPECT_EQ(sink, total * static_cast<float>(lanes)) << hwy::TargetName(target);
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace
}  // namespace kvrt::machine
