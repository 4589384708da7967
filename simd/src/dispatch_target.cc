// Asks dynamic dispatch itself rather than re-deriving its choice: each compiled
// target's copy of TargetOfThisCopy returns its own HWY_TARGET.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "dispatch_target.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {

int64_t TargetOfThisCopy() { return HWY_TARGET; }

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kvrt/simd/dispatch_target.h"

namespace kvrt::simd {

HWY_EXPORT(TargetOfThisCopy);

std::string_view DispatchedTargetName() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(TargetOfThisCopy)()); }

bool RestrictDispatchTo(std::string_view name) {
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    if (name != hwy::TargetName(target)) continue;
    hwy::SetSupportedTargetsForTest(target);
    hwy::SupportedTargets();  // makes the dispatch tables choose again
    return DispatchedTargetName() == name;
  }
  return false;
}

}  // namespace kvrt::simd
#endif  // HWY_ONCE
