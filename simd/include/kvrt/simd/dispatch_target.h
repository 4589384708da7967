// Which Highway target the kernels run on in this process ("AVX3", "AVX2",
// "EMU128", ...): the one HWY_DYNAMIC_DISPATCH picks on this CPU among the
// compiled targets. Reported by `kvrt --version` and in every --json output, so
// a measurement or a bug report says which code path produced it.
#pragma once

#include <string_view>

namespace kvrt::simd {

std::string_view DispatchedTargetName();

// Makes dynamic dispatch pick the compiled target called `name` (as
// DispatchedTargetName spells it), which this CPU must support: the benchmarks'
// --simd_target, to measure e.g. the AVX2 kernels on an AVX-512 machine. False, and
// nothing changed, when no such target is compiled and supported. Call it before any
// kernel runs: choices cached from the earlier target (the int8 kernel's VNNI check)
// would not follow.
bool RestrictDispatchTo(std::string_view name);

}  // namespace kvrt::simd
