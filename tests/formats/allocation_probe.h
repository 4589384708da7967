// Records the largest single heap request made on the calling thread while a
// probe is active, so tests can prove that hostile length fields never turn
// into large reservations. (allocation_probe.cc is the heap_hooks.h policy of
// formats_tests.)
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
