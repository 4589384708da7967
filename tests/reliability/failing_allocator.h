// A test-binary heap hook for fault injection: makes exactly one heap
// allocation of the calling thread fail, the n-th one after arming.
//
// failing_allocator.cc is the heap_hooks.h policy of the fault-test binary:
// global operator new, whose failure throws std::bad_alloc, and, outside
// sanitizer builds (sanitizers own malloc), malloc and its relatives, whose
// failure returns null. The state is per thread, so the gtest runner, the thread pool's
// workers and concurrent tests are not disturbed. The runtime's own aligned
// buffers are injected separately, through memory::FailAllocationsAfter.
#pragma once

#include <cstdint>

namespace kvrt::testing {

// From now on, the calling thread's heap allocation number `n` (0-based,
// counted from this call) fails; every other one succeeds.
void FailNthHeapAllocation(uint64_t n);
// Disarms the hook; the count keeps running.
void ClearHeapAllocationFailure();
// Heap allocations the calling thread made since the last arming (or reset).
uint64_t HeapAllocationsSinceArmed();
void ResetHeapAllocationCount();
// True when the armed failure has been delivered.
bool HeapFailureDelivered();

}  // namespace kvrt::testing
