#include "process_allocator.h"

#include <cstdlib>

#if defined(KVRT_PROCESS_MIMALLOC)
#include <mimalloc.h>
#endif

namespace kvrt::allocator {

std::string ProcessAllocatorName() {
#if defined(KVRT_PROCESS_MIMALLOC)
  // Linking mimalloc replaces malloc only if its symbols come first in the process's
  // lookup order, so ask it whether it owns a block malloc just handed out.
  void* block = std::malloc(64);
  const bool owned = block != nullptr && mi_is_in_heap_region(block);
  std::free(block);
  if (owned) {
    const int version = mi_version();  // e.g. 209 for 2.0.9
    return "mimalloc " + std::to_string(version / 100) + "." + std::to_string(version / 10 % 10) + "." +
           std::to_string(version % 10);
  }
#endif
  return "libc";
}

}  // namespace kvrt::allocator
