// The Highway targets a kernel suite runs on: every target compiled in and supported
// by this CPU (Highway's own list) in the release build; under a sanitizer, all but
// one of them when there are three or more.
//
// Why: a sanitizer build looks for memory errors and races, and each target's code
// is the same loops at another width; running every suite on every target under
// ASan costs CI minutes (sanitizer_build.h). Which target a suite leaves out rotates
// with the suite's name, so every target still runs most of the suites.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "sanitizer_build.h"
#include "tested_targets.h"

namespace kvrt::simd_test {

inline std::vector<int64_t> TestedTargets(std::string_view suite) {
  std::vector<int64_t> targets = ::hwy::SupportedAndGeneratedTargets();
#if defined(KVRT_SANITIZER_BUILD)
  if (targets.size() >= 3) {
    targets.erase(targets.begin() + static_cast<std::ptrdiff_t>(std::hash<std::string_view>{}(suite) % targets.size()));
  }
#else
  (void)suite;
#endif
  return targets;
}

}  // namespace kvrt::simd_test

// HWY_TARGET_INSTANTIATE_TEST_SUITE_P over TestedTargets.
#define KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(suite)                                                   \
  INSTANTIATE_TEST_SUITE_P(suite##Group, suite, testing::ValuesIn(::kvrt::simd_test::TestedTargets(#suite)), \
                           ::hwy::TestParamTargetName)
