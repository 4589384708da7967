#include "core/allocation_faults.h"
#include "fault_sweep.h"

#include <gtest/gtest.h>

#include <exception>
#include <iostream>

#include "failing_allocator.h"
#include "core/buffer.h"

namespace kvrt::testing {
namespace {

// A sweep that has not succeeded this far past the clean count is not
// converging; stop instead of looping forever.
constexpr uint64_t kSlack = 4;

void Disarm() {
  memory::ClearAllocationFailures();
  ClearHeapAllocationFailure();
}

struct Attempt {
  std::optional<Error> error;
  std::optional<std::string> escaped;  // what() of an exception that left the API
};

Attempt RunOnce(const FaultCase& fault_case, AllocationHook hook, std::optional<uint64_t> fail_at,
                uint64_t* allocations) {
  fault_case.prepare();
  const uint64_t runtime_before = memory::AllocationCallsOnThisThread();
  // Arming the heap hook also restarts its count; UINT64_MAX never fires.
  FailNthHeapAllocation(hook == AllocationHook::kHeap && fail_at ? *fail_at : UINT64_MAX);
  if (hook == AllocationHook::kRuntimeBuffers && fail_at) memory::FailAllocationsAfter(*fail_at);
  Attempt attempt;
  try {
    attempt.error = fault_case.run();
  } catch (const std::exception& e) {
    attempt.escaped = e.what();
  } catch (...) {
    attempt.escaped = "a non-standard exception";
  }
  const uint64_t heap_calls = HeapAllocationsSinceArmed();
  Disarm();
  if (allocations != nullptr) {
    *allocations = hook == AllocationHook::kHeap
                       ? heap_calls
                       : memory::AllocationCallsOnThisThread() - runtime_before;
  }
  return attempt;
}

}  // namespace

const char* HookName(AllocationHook hook) {
  return hook == AllocationHook::kHeap ? "heap" : "runtime-buffers";
}

SweepReport Sweep(const FaultCase& fault_case, AllocationHook hook) {
  SCOPED_TRACE(fault_case.name + " / " + HookName(hook));
  SweepReport report;
  const Attempt clean = RunOnce(fault_case, hook, std::nullopt, &report.sites);
  if (clean.escaped || clean.error) {
    ADD_FAILURE() << "the operation fails without injection: "
                  << (clean.escaped ? *clean.escaped : clean.error->Debug());
    return report;
  }
  fault_case.expect_succeeded();
  for (uint64_t n = 0; n <= report.sites + kSlack; ++n) {
    SCOPED_TRACE("allocation " + std::to_string(n) + " fails");
    const Attempt attempt = RunOnce(fault_case, hook, n, nullptr);
    if (attempt.escaped) {
      if (report.escaped++ == 0) {
        ADD_FAILURE() << "an exception escaped the API: " << *attempt.escaped
                      << " (first at allocation " << n << "; later ones only counted)";
      }
      continue;
    }
    if (!attempt.error) {
      fault_case.expect_succeeded();
      if (n >= report.sites) break;  // the hook no longer reaches the operation
      ++report.absorbed;
      continue;
    }
    EXPECT_LT(n, report.sites) << "fails beyond its clean allocation count: "
                               << attempt.error->Debug();
    EXPECT_LT(static_cast<size_t>(attempt.error->code()), static_cast<size_t>(ErrorCode::kCount));
    EXPECT_FALSE(attempt.error->Debug().empty());
    ++report.failed;
    ++report.errors[std::string(attempt.error->name())];
    fault_case.expect_unchanged();
  }
  std::cout << "[fault] " << fault_case.name << " " << HookName(hook) << ": " << report.sites
            << " sites, " << report.failed << " typed errors, " << report.absorbed << " absorbed";
  if (report.escaped > 0) std::cout << ", " << report.escaped << " ESCAPED";
  for (const auto& [name, count] : report.errors) std::cout << ", " << name << " x" << count;
  std::cout << "\n";
  return report;
}

}  // namespace kvrt::testing
