// One Google Benchmark run (its --benchmark_format=json output, or `kvrt bench -o
// json`) as bench-compare needs it: per benchmark, the median time, the coefficient
// of variation of the repetitions, every repetition's time and the counters of the
// median row.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kvrt/error.h"

namespace kvrt::cli {

struct BenchmarkRow {
  double seconds = 0;  // median real time: the median aggregate, else the median of the runs
  double cv = 0;       // coefficient of variation of the repetitions, 0 without
  std::vector<double> samples;  // seconds of every repetition ("iteration" rows), in file order
  std::map<std::string, double> counters;
};

using BenchmarkRun = std::map<std::string, BenchmarkRow>;

// Errors: Io (unreadable, not a file, over the size limit), InvalidArgument (not
// JSON, not Google Benchmark output, or no benchmark with a time: an empty run
// must not pass a gate by having nothing to compare).
Result<BenchmarkRun> ReadBenchmarkRun(const std::string& path);

// The Highway target the benchmark binary dispatched to, as its JSON context records
// it ("simd_target", bench/kernels/bench_main.h); empty when the run does not say.
// Errors: as ReadBenchmarkRun for an unreadable or non-JSON file.
Result<std::string> ReadBenchmarkSimdTarget(const std::string& path);

}  // namespace kvrt::cli
