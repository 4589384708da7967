// SplitMix64: the reference's only random generator (spec/sampling.md §1).
// The state is the raw 64-bit value; seeding and resuming are the same operation.
#pragma once

#include <cstdint>

namespace kvrt {

class SplitMix64 {
 public:
  static constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;

  explicit constexpr SplitMix64(uint64_t state) : state_(state) {}

  constexpr uint64_t NextU64() {
    state_ += kGamma;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Top 53 bits scaled by 2^-53: a double in [0, 1), both steps exact.
  constexpr double NextUnit() {
    return static_cast<double>(NextU64() >> 11) * (1.0 / 9007199254740992.0);
  }

  constexpr uint64_t state() const { return state_; }

 private:
  uint64_t state_;
};

}  // namespace kvrt
