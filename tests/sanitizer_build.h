// What a sanitizer build of the tests does differently. Kept apart from
// test_support.h so that kernel tests, which live in kvrt::simd and use Highway's
// test macros (unqualified `testing::`), can include it without a kvrt::testing
// namespace in sight.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

// Sanitizers reserve terabytes of shadow memory and ASan's quarantine keeps freed
// blocks resident: no address-space limit or peak-RSS bound means anything there.
// (clang < 17 does not define __SANITIZE_ADDRESS__; __has_feature is its spelling.)
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KVRT_SANITIZER_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KVRT_SANITIZER_BUILD 1
#endif
#endif

namespace kvrt::sanitizer_build {

// Loops that run a whole fixture set through the CLI or a generation (every golden
// prefix, every recorded chat template), or a whole grid of kernel shapes, check
// each case's values in the release build. A sanitizer build looks for memory errors and races, which the same code
// path shows on a sample: it takes every kSanitizerCaseStride-th case, so that CI's
// sanitizer stages stay within its time (see .ci/run).
#if defined(KVRT_SANITIZER_BUILD)
inline constexpr size_t kSanitizerCaseStride = 8;
#else
inline constexpr size_t kSanitizerCaseStride = 1;
#endif

// Whether case `index` of such a loop runs in this build.
inline bool CaseRunsInThisBuild(size_t index) { return index % kSanitizerCaseStride == 0; }

// Suites with one whole model file per parameter (load it, run the fast engine, the f64
// reference and a plain forward pass), or one whole model per weight format, check
// every file (format) in the release build. Under a
// sanitizer each such test takes seconds, and the engine code it runs is the same for
// every file: a sanitizer build runs the files whose name hashes into every
// kSanitizerFileStride-th class and skips the rest (kSanitizerSkipReason says why).
#if defined(KVRT_SANITIZER_BUILD)
inline constexpr size_t kSanitizerFileStride = 3;
#else
inline constexpr size_t kSanitizerFileStride = 1;
#endif

inline bool FileRunsInThisBuild(std::string_view name) {
  return std::hash<std::string_view>{}(name) % kSanitizerFileStride == 0;
}

inline constexpr const char* kSanitizerSkipReason =
    "a sanitizer build checks a sample of the model files (sanitizer_build.h)";

}  // namespace kvrt::sanitizer_build
