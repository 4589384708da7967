// The main() body shared by the benchmark binaries: default flags first, so that
// flags given on the command line come later and take precedence.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "kvrt/machine/machine_limits.h"
#include "kvrt/simd/amx.h"
#include "kvrt/simd/dispatch_target.h"
#include "process_allocator.h"

namespace kvrt::bench {

// Runs the benchmarks `register_all` registers, with `defaults` (e.g.
// "--benchmark_repetitions=5") applied unless the command line overrides them, and
// --simd_target=NAME (e.g. AVX2) choosing the kernels' Highway target and --amx=0
// keeping the dispatching kernels off the AMX tiles (simd/amx.h).
template <class RegisterAll>
int RunBenchmarkMain(int argc, char** argv, std::initializer_list<const char*> defaults,
                     RegisterAll&& register_all) {
  std::vector<std::string> default_flags(defaults.begin(), defaults.end());
  std::vector<char*> args = {argv[0]};
  for (std::string& flag : default_flags) args.push_back(flag.data());
  constexpr std::string_view kTargetFlag = "--simd_target=";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--amx=0" || arg == "--amx=1") {
      kvrt::simd::AllowAmx(arg == "--amx=1");
      continue;
    }
    if (arg.substr(0, kTargetFlag.size()) != kTargetFlag) {
      args.push_back(argv[i]);
      continue;
    }
    // Runs every kernel on another compiled target this CPU supports (AVX2 on an
    // AVX-512 machine, say); the JSON context's simd_target says which ran.
    const std::string_view name = arg.substr(kTargetFlag.size());
    if (!kvrt::simd::RestrictDispatchTo(name)) {
      std::fprintf(stderr, "%s: --simd_target=%.*s is not a compiled target this CPU supports\n",
                   argv[0], static_cast<int>(name.size()), name.data());
      return 2;
    }
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  // The performance gate picks a ratio's floor by the target (bench/perf_gate.json).
  benchmark::AddCustomContext("simd_target", std::string(kvrt::simd::DispatchedTargetName()));
  benchmark::AddCustomContext("allocator", kvrt::allocator::ProcessAllocatorName());
  // The unit the bf16-activation rows (and their peak) run on.
  benchmark::AddCustomContext("bf16_dot_unit", kvrt::machine::Bf16DotUnit());
  if (!kvrt::simd::AmxBf16Available()) {
    benchmark::AddCustomContext("amx", "unavailable: " + std::string(kvrt::simd::AmxBf16UnavailableReason()));
  }
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace kvrt::bench
