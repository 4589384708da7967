#include <mimalloc.h>

#include <cstdlib>

#include "core/allocation_faults.h"
#include "kvrt/buffer.h"

// Under a sanitizer the buffers come from the sanitizer's allocator instead of
// mimalloc. mimalloc is an uninstrumented library with its own heap: ASan would
// see neither a buffer's bounds (an engine writing one row past its workspace
// would go unnoticed) nor use after free, and TSan neither the allocation nor
// the cross-thread free that separates two users of the same memory.
// g++ announces sanitizers with __SANITIZE_*__, clang through __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KVRT_SANITIZER_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KVRT_SANITIZER_HEAP 1
#endif
#endif

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
  // A zero-byte request still gets a unique pointer, so that an empty buffer
  // stays distinguishable from a failed allocation.
  const size_t size = bytes == 0 ? 1 : bytes;
#if defined(KVRT_SANITIZER_HEAP)
  // posix_memalign keeps the exact size, so a read one byte past a buffer is
  // reported (aligned_alloc would round the size up to the alignment).
  void* pointer = nullptr;
  return posix_memalign(&pointer, kBufferAlignment, size) == 0 ? pointer : nullptr;
#else
  return mi_malloc_aligned(size, kBufferAlignment);
#endif
}

void FreeAligned(void* pointer) {
#if defined(KVRT_SANITIZER_HEAP)
  std::free(pointer);
#else
  mi_free(pointer);
#endif
}

void FailAllocationsAfter(uint64_t successes) {
  fault_injection.armed = true;
  fault_injection.successes_left = successes;
}

void ClearAllocationFailures() { fault_injection.armed = false; }

uint64_t AllocationCallsOnThisThread() { return fault_injection.calls; }

}  // namespace kvrt::memory
