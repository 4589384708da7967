// Heap policy of the formats tests (see heap_hooks.h): remember the largest request.
#include "allocation_probe.h"

#include "heap_hooks.h"

namespace {

// Static TLS of the executable: usable inside malloc, before any constructor runs.
__thread bool probe_active = false;
__thread std::size_t largest_request = 0;

}  // namespace

namespace kvrt::testing {

bool OnHeapRequest(std::size_t bytes) {
  if (probe_active && bytes > largest_request) largest_request = bytes;
  return true;
}

LargestAllocationProbe::LargestAllocationProbe() {
  probe_active = true;
  largest_request = 0;
}
LargestAllocationProbe::~LargestAllocationProbe() { probe_active = false; }
size_t LargestAllocationProbe::largest() const { return largest_request; }

}  // namespace kvrt::testing
