// Replaces the process's heap entry points in a test binary so a policy can
// watch (or refuse) every request: operator new in every build, and malloc and
// its relatives as well outside sanitizer builds (sanitizers own malloc), which
// covers allocations made inside libraries and on the thread pool's workers.
//
// heap_hooks.cc holds the replacement functions; each binary links it together
// with exactly one policy file that defines OnHeapRequest:
//   allocation_counter.cc        counts requests (no allocation on decode)
//   formats/allocation_probe.cc  records the largest request (hostile lengths)
//   reliability/failing_allocator.cc  fails the n-th request (fault sweeps)
#pragma once

#include <cstddef>

namespace kvrt::testing {

// Called once per heap request, possibly inside malloc on any thread and before
// any constructor has run: it may touch only static thread-local or atomic
// state. Returning false makes the request fail (null, or std::bad_alloc).
bool OnHeapRequest(std::size_t bytes);

}  // namespace kvrt::testing
