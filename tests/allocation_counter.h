// Counts heap allocations so tests can prove that hot paths allocate nothing.
//
// allocation_counter.cc is the heap_hooks.h policy of the runtime tests: malloc
// and its relatives and operator new are counted on every thread, including the
// thread pool's workers; the runtime's own aligned allocations (posix_memalign)
// are counted by the runtime as well. Under sanitizers, which own malloc, only operator new
// is counted.
#pragma once

#include <cstdint>

#include "core/allocation_faults.h"
#include "core/buffer.h"

namespace kvrt::testing {

// Heap allocations made by any thread of the process so far.
uint64_t HeapAllocationsInProcess();
// Heap allocations made by the calling thread so far.
uint64_t HeapCallsOnThisThread();

inline uint64_t HeapAllocationsOnThisThread() {
  return HeapCallsOnThisThread() + memory::AllocationCallsOnThisThread();
}

}  // namespace kvrt::testing
