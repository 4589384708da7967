// Allocation-fault sweeps: run one operation with allocation n failing, for
// every n the operation reaches, and check what the API promises each time.
//
// Two hooks:
//   * kRuntimeBuffers: memory::FailAllocationsAfter(n), the runtime's aligned
//     buffers; allocation n and every later one fail (sustained exhaustion);
//   * kHeap: failing_allocator.h; exactly heap allocation n fails (operator new
//     throws std::bad_alloc; malloc returns null outside sanitizer builds).
// A clean run first counts the operation's allocations on this thread (its
// allocation sites, each dynamic call counted once); then every n below that
// count must end in a typed error with the state unchanged (or, if the failure
// was absorbed, in a correct success), and never in an escaped exception.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "kvrt/error.h"

namespace kvrt::testing {

enum class AllocationHook { kRuntimeBuffers, kHeap };
// Every hook, for sweeps that run under each.
inline constexpr AllocationHook kAllocationHooks[] = {AllocationHook::kRuntimeBuffers, AllocationHook::kHeap};
const char* HookName(AllocationHook hook);

struct FaultCase {
  std::string name;
  // Fresh state for one attempt; runs with the hooks disarmed.
  std::function<void()> prepare;
  // The operation under test: nullopt on success, else the returned error.
  std::function<std::optional<Error>()> run;
  // Must hold after a failed run: the state is as prepare() left it.
  std::function<void()> expect_unchanged;
  // Must hold after a successful run (including one that absorbed a failure).
  std::function<void()> expect_succeeded = [] {};
};

struct SweepReport {
  uint64_t sites = 0;     // allocations of a clean run = failure points swept
  uint64_t failed = 0;    // runs that returned a typed error
  uint64_t absorbed = 0;  // runs that succeeded despite the failure
  uint64_t escaped = 0;   // runs that threw out of the API (each also a test failure)
  std::map<std::string, uint64_t> errors;  // outermost variant -> count
};

// Sweeps `fault_case` with `hook`, reporting problems as gtest failures, and
// prints one summary line ("[fault] <name> <hook>: N sites ...").
SweepReport Sweep(const FaultCase& fault_case, AllocationHook hook);

}  // namespace kvrt::testing
