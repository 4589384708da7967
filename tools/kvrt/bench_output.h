// The four outputs of `kvrt bench`: a markdown table (the default, like
// llama-bench's), CSV, JSON in Google Benchmark's shape (what its compare.py and
// `kvrt bench-compare` read) and JSON lines. Every format carries the build and
// machine facts — kvrt's version and commit, the SIMD target, the allocator, the
// CPU model and its cores — so that a number can be traced to where it was made.
#pragma once

#include <string>
#include <vector>

#include "bench_runner.h"
#include "build_facts.h"

namespace kvrt::cli {

struct BenchReport {
  std::string model_path;
  size_t model_parameters = 0;
  size_t repetitions = 0;
  BuildFacts build;       // threads: the default pool's (rows name their own)
  std::string cpu_model;  // /proc/cpuinfo's "model name"; "unknown" elsewhere
  size_t cores = 0;       // hardware threads the OS reports
  // CPUs this process may run on (its affinity mask, as `taskset` or a container
  // sets it): a row with more threads than this shares cores, and oneTBB caps its
  // workers at the mask, so the row does not measure what its thread count says.
  size_t usable_cores = 0;
  std::vector<BenchRow> rows;
};

// The CPU model, hardware threads and usable CPUs of this machine, into `report`.
void FillMachineFacts(BenchReport& report);

// CPUs in this process's affinity mask (sched_getaffinity); the hardware threads
// where the mask cannot be read.
size_t UsableCores();

std::string BenchMarkdown(const BenchReport& report);
std::string BenchCsv(const BenchReport& report);
// {"context": {...facts...}, "benchmarks": [per row: one "iteration" entry per
// timed run, then the mean, median, stddev and cv aggregates]}; times are
// microseconds per token, so that a larger time is slower as compare.py expects.
std::string BenchJson(const BenchReport& report);
// One object per row, facts included in each.
std::string BenchJsonLines(const BenchReport& report);

}  // namespace kvrt::cli
