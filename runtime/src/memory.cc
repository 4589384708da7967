#include <mimalloc.h>

#include "kvrt/buffer.h"

namespace kvrt::memory {
namespace {

struct FaultInjection {
  bool armed = false;
  uint64_t successes_left = 0;
  uint64_t calls = 0;
};
thread_local FaultInjection fault_injection;

}  // namespace

void* AllocateAligned(size_t bytes) {
  FaultInjection& state = fault_injection;
  ++state.calls;
  if (state.armed) {
    if (state.successes_left == 0) return nullptr;
    --state.successes_left;
  }
  // mimalloc serves zero-byte requests with a unique pointer; keep that so that
  // an empty buffer is still distinguishable from a failed allocation.
  return mi_malloc_aligned(bytes == 0 ? 1 : bytes, kBufferAlignment);
}

void FreeAligned(void* pointer) { mi_free(pointer); }

void FailAllocationsAfter(uint64_t successes) {
  fault_injection.armed = true;
  fault_injection.successes_left = successes;
}

void ClearAllocationFailures() { fault_injection.armed = false; }

uint64_t AllocationCallsOnThisThread() { return fault_injection.calls; }

}  // namespace kvrt::memory
