// Records the largest single operator-new request made on the calling thread
// while a probe is active, so tests can prove that hostile length fields never
// turn into large reservations. (Replaces global operator new in formats_tests.)
#pragma once

#include <cstddef>

namespace kvrt::testing {

class LargestAllocationProbe {
 public:
  LargestAllocationProbe();
  ~LargestAllocationProbe();
  LargestAllocationProbe(const LargestAllocationProbe&) = delete;
  LargestAllocationProbe& operator=(const LargestAllocationProbe&) = delete;

  // Largest request, in bytes, since construction.
  size_t largest() const;
};

}  // namespace kvrt::testing
