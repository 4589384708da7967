// Property checks for the fuzz targets: a violated property prints what failed
// and aborts, which libFuzzer reports as a crash with the reproducing input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "kvrt/error.h"

namespace kvrt::fuzz {

[[noreturn]] inline void Violation(const char* file, int line, const char* condition,
                                   const std::string& detail) {
  std::fprintf(stderr, "%s:%d: property violated: %s\n  %s\n", file, line, condition,
               detail.c_str());
  std::abort();
}

// The Debug() text of a failed Result, or "ok".
template <class R>
std::string Describe(const R& result) {
  return result ? std::string("ok") : result.error().Debug();
}

// Every error a public call returns must be a well-formed typed value.
inline void CheckTypedError(const Error& error) {
  if (error.levels().empty() || error.code() >= ErrorCode::kCount ||
      error.innermost() >= ErrorCode::kCount || error.Debug().empty()) {
    Violation(__FILE__, __LINE__, "typed error", error.Debug());
  }
}

}  // namespace kvrt::fuzz

#define KVRT_FUZZ_CHECK(condition, detail)                                       \
  do {                                                                           \
    if (!(condition)) ::kvrt::fuzz::Violation(__FILE__, __LINE__, #condition, (detail)); \
  } while (false)
