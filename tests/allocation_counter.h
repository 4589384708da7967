// Counts every heap allocation made on the calling thread: global operator new
// (replaced in allocation_counter.cc, linked into the test binary) plus the
// runtime's own aligned allocations. Used to prove hot paths allocate nothing.
#pragma once

#include <cstdint>

#include "kvrt/buffer.h"

namespace kvrt::testing {

uint64_t OperatorNewCallsOnThisThread();

inline uint64_t HeapAllocationsOnThisThread() {
  return OperatorNewCallsOnThisThread() + memory::AllocationCallsOnThisThread();
}

}  // namespace kvrt::testing
