// Which Highway target the kernels run on in this process ("AVX3", "AVX2",
// "EMU128", ...): the one HWY_DYNAMIC_DISPATCH picks on this CPU among the
// compiled targets. Reported by `kvrt --version` and in every --json output, so
// a measurement or a bug report says which code path produced it.
#pragma once

#include <string_view>

namespace kvrt::simd {

std::string_view DispatchedTargetName();

}  // namespace kvrt::simd
