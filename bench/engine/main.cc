// bench_engine: decode scaling with the context (cached vs complete-prefix replay),
// prefill throughput vs prompt length and threads, and end-to-end tokens/s of the
// 15M/42M/110M shapes against the roofline measured in the same run.
//
// Unless the command line says otherwise, every row runs 3 repetitions and shows
// only the aggregates: read the medians.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "engine_benchmarks.h"
#include "kvrt/threading/thread_pool.h"

int main(int argc, char** argv) {
  std::string repetitions = "--benchmark_repetitions=3";
  std::string aggregates = "--benchmark_display_aggregates_only=true";
  std::vector<char*> args = {argv[0], repetitions.data(), aggregates.data()};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  kvrt::threading::ThreadPool one_thread(1);
  kvrt::threading::ThreadPool two_threads(2);
  kvrt::bench::RegisterEngineBenchmarks(one_thread, two_threads);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
