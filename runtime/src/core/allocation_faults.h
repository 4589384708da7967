// Fault injection for the runtime's aligned buffers (core/memory.cc). Tests and
// fuzzers use it to fail the n-th allocation; it is not part of the installed API.
#pragma once

#include <cstdint>

namespace kvrt::memory {

// Test hook for fault injection: after `successes` more successful allocations on
// the calling thread, every AllocateZeroed on that thread fails until the hook
// is cleared. Process-wide state would make concurrent tests interfere, so the
// counter is per thread.
void FailAllocationsAfter(uint64_t successes);
void ClearAllocationFailures();
// Number of AllocateZeroed calls made on this thread (successful or not).
uint64_t AllocationCallsOnThisThread();
// The same for BackPagesForWriting: after `successes` more calls on the calling
// thread, every call fails (as when the system is out of memory) until cleared.
void FailPageBackingAfter(uint64_t successes);
void ClearPageBackingFailures();

}  // namespace kvrt::memory
