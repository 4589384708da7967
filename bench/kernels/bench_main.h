// The main() body shared by the benchmark binaries: default flags first, so that
// flags given on the command line come later and take precedence.
#pragma once

#include <benchmark/benchmark.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "kvrt/simd/dispatch_target.h"

namespace kvrt::bench {

// Runs the benchmarks `register_all` registers, with `defaults` (e.g.
// "--benchmark_repetitions=5") applied unless the command line overrides them.
template <class RegisterAll>
int RunBenchmarkMain(int argc, char** argv, std::initializer_list<const char*> defaults,
                     RegisterAll&& register_all) {
  std::vector<std::string> default_flags(defaults.begin(), defaults.end());
  std::vector<char*> args = {argv[0]};
  for (std::string& flag : default_flags) args.push_back(flag.data());
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  // The performance gate picks a ratio's floor by the target (bench/perf_gate.json).
  benchmark::AddCustomContext("simd_target", std::string(kvrt::simd::DispatchedTargetName()));
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace kvrt::bench
