// What produced an output: kvrt's version, the git commit it was configured
// from, the Highway target the kernels dispatch to, the worker threads and the
// allocator that serves the process (mimalloc, or libc in sanitizer builds). Printed
// by `kvrt --version`, as the "kvrt" object of every --json output and on
// generate's statistics line, so that numbers can be traced to their build and
// machine.
#pragma once

#include <cstddef>
#include <string>

#include "json_writer.h"

namespace kvrt::cli {

struct BuildFacts {
  std::string version;
  std::string commit;
  std::string simd_target;
  size_t threads = 0;
  std::string allocator;  // "mimalloc 2.0.9" or "libc"
};

// `threads`: the worker threads of the command's engine (0: the default pool size).
BuildFacts CurrentBuildFacts(size_t threads = 0);

// "kvrt 0.1.0 (commit abc, simd AVX3, 2 threads, allocator mimalloc 2.0.9)"
std::string BuildFactsLine(const BuildFacts& facts);

// Writes `"kvrt": {"version": ..., "commit": ..., "simd_target": ..., "threads": ...,
// "allocator": ...}`
// into the object being written.
void WriteBuildFacts(JsonWriter& json, const BuildFacts& facts);

}  // namespace kvrt::cli
