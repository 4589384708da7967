// The int8 dot probe (machine_limits.h) is the peak that `kvrt bench` and the kernel
// benchmarks judge int8 activations by: a probe whose work the compiler dropped, or
// that counted operations it did not run, would inflate that peak silently. Every
// byte it multiplies is 1, so its chains end at values known in advance: the sum it
// leaves in `sink` proves each round's products were computed and added.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "hwy/targets.h"
#include "kvrt/machine/machine_limits.h"
#include "kvrt/simd/int8_activations.h"

namespace kvrt::machine {
namespace {

constexpr size_t kChains = 16;
constexpr size_t kProductsPerLane = 4;  // four byte products into each int32 lane

// Sixteen chains start at 0..15. VPDPBUSD and the byte pairs add 1·1 four times a
// round to every lane; the portable form multiplies chain c's bytes by c + 1.
// The probe sums the lanes modulo 2^32.
uint32_t ExpectedSink(size_t lanes, size_t rounds, bool every_chain_by_one) {
  uint64_t per_lane = 0;
  for (size_t c = 0; c < kChains; ++c) {
    const uint64_t step = every_chain_by_one ? 1 : c + 1;
    per_lane += c + step * kProductsPerLane * rounds;
  }
  return static_cast<uint32_t>(per_lane * lanes);
}

// Runs the probe for `rounds` on every compiled target and checks the operations it
// reports and the sum it leaves.
void ExpectEveryTargetRunsWhatItCounts(size_t rounds) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    uint32_t sink = 0;
    const size_t ops = RunInt8DotProbe(rounds, &sink);
    const size_t per_round = kChains * kProductsPerLane * 2;
    ASSERT_EQ(ops % (rounds * per_round), 0u) << hwy::TargetName(target);
    const size_t lanes = ops / (rounds * per_round);
    EXPECT_TRUE(lanes == 1 || lanes == 4 || lanes == 8 || lanes == 16) << hwy::TargetName(target) << " " << lanes;
    // The byte forms: VPDPBUSD (AVX3 with VNNI) and AVX2's pairs; otherwise the portable one.
    const bool byte_form = target == HWY_AVX2 || (target == HWY_AVX3 && simd::Int8DotUsesVnni());
    EXPECT_EQ(sink, ExpectedSink(lanes, rounds, byte_form)) << hwy::TargetName(target);
  }
  hwy::SetSupportedTargetsForTest(0);
}

// Past the AVX2 form's 4,096-round widening, and an odd remainder.
TEST(Int8DotProbeTest, EveryTargetRunsTheOperationsItCounts) { ExpectEveryTargetRunsWhatItCounts(5'003); }

// A run long enough that the chains' total passes 2^31 on AVX-512 (16 lanes × 16
// chains × 4 a round × 2.2M rounds): the sum wraps as unsigned words, not into
// signed overflow (UBSan watches this in CI).
TEST(Int8DotProbeTest, ALongRunWrapsItsSumWithoutOverflow) { ExpectEveryTargetRunsWhatItCounts(2'200'000); }

}  // namespace
}  // namespace kvrt::machine
