// Heap policy of the fault tests (see heap_hooks.h): fail the n-th request.
#include "failing_allocator.h"

#include <cstdint>

#include "heap_hooks.h"

namespace {

// Static TLS of the executable: usable inside malloc, before any constructor runs.
__thread bool armed = false;
__thread bool delivered = false;
__thread uint64_t fail_at = 0;
__thread uint64_t calls = 0;

}  // namespace

namespace kvrt::testing {

bool OnHeapRequest(std::size_t) {
  const uint64_t index = calls++;
  if (!armed || delivered || index != fail_at) return true;
  delivered = true;
  return false;
}

void FailNthHeapAllocation(uint64_t n) {
  calls = 0;
  fail_at = n;
  delivered = false;
  armed = true;
}
void ClearHeapAllocationFailure() { armed = false; }
uint64_t HeapAllocationsSinceArmed() { return calls; }
void ResetHeapAllocationCount() { calls = 0; }
bool HeapFailureDelivered() { return delivered; }

}  // namespace kvrt::testing
