// Heap policy of the runtime tests (see heap_hooks.h): count every request.
#include "core/allocation_faults.h"
#include "allocation_counter.h"

#include <atomic>

#include "heap_hooks.h"

namespace {

// Static TLS of the executable: usable inside malloc, before any constructor runs.
__thread uint64_t thread_calls = 0;
std::atomic<uint64_t> process_calls{0};

}  // namespace

namespace kvrt::testing {

bool OnHeapRequest(std::size_t) {
  ++thread_calls;
  process_calls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

uint64_t HeapAllocationsInProcess() {
  return process_calls.load(std::memory_order_relaxed) + memory::AllocationCallsOnThisThread();
}
uint64_t HeapCallsOnThisThread() { return thread_calls; }

}  // namespace kvrt::testing
