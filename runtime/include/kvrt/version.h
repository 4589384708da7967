// Which kvrt this is, and what it runs with on this machine.
#pragma once

#include <cstddef>
#include <string_view>

namespace kvrt {

// The library's version, "major.minor.patch" (the C API's kvrt_version()).
std::string_view Version();
// The Highway target the kernels dispatch to on this CPU ("AVX3_ZEN4", "AVX3",
// "AVX2", ...), chosen at run time among those the build compiled.
std::string_view SimdTarget();
// The threads a fast engine runs on when EngineOptions::threads is 0:
// $KVRT_THREADS when it holds a positive count, else every core.
size_t DefaultThreads();

}  // namespace kvrt
