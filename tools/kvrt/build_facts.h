// What produced an output: kvrt's version, the git commit it was configured
// from, the Highway target the kernels dispatch to and the worker threads. Printed
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
};

// `threads`: the worker threads of the command's engine (0: the default pool size).
BuildFacts CurrentBuildFacts(size_t threads = 0);

// "kvrt 0.1.0 (commit abc, simd AVX3, 2 threads)"
std::string BuildFactsLine(const BuildFacts& facts);

// Writes `"kvrt": {"version": ..., "commit": ..., "simd_target": ..., "threads": ...}`
// into the object being written.
void WriteBuildFacts(JsonWriter& json, const BuildFacts& facts);

}  // namespace kvrt::cli
