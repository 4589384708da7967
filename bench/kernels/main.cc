// bench_kernels: every simd kernel, fast vs scalar twin, at the sizes the models use,
// plus this machine's FMA peak and read bandwidth (MachineLimits/* rows). The rows
// judged against a limit (MatMul: fma_peak_fraction, MatVec with weights not in
// cache: read_bw_fraction) measure that limit right before their timed loop.
//
// Unless the command line says otherwise, every row runs 5 repetitions and only the
// aggregates (median, mean, stddev, cv) are shown: the machine is shared and noisy,
// so read the medians. --benchmark_format=json works as usual;
// bench/kernels/summarize.py turns one JSON run into the fast/twin and 2-thread
// ratios.
#include "bench_main.h"
#include "kernel_benchmarks.h"
#include "kvrt/threading/thread_pool.h"

int main(int argc, char** argv) {
  kvrt::threading::ThreadPool one_thread(1);
  kvrt::threading::ThreadPool two_threads(2);
  const auto register_all = [&] {
    // Rows run in registration order. The limits and the rows judged against them
    // come first and close together (on a shared machine, the time a second core
    // stays free is short); the fast-vs-twin rows, which compare single threads,
    // follow.
    kvrt::bench::RegisterMachineLimitBenchmarks(one_thread, two_threads);
    kvrt::bench::RegisterMatMulBenchmarks(one_thread, two_threads);
    kvrt::bench::RegisterMatMulScalingBenchmarks(one_thread, two_threads);
    kvrt::bench::RegisterMatVecBenchmarks(one_thread, two_threads);
    kvrt::bench::RegisterCompressedBenchmarks(one_thread, two_threads);
    kvrt::bench::RegisterVectorKernelBenchmarks();
    kvrt::bench::RegisterAttentionBenchmarks();
    kvrt::bench::RegisterDecodeAttentionBenchmarks(one_thread);
  };
  return kvrt::bench::RunBenchmarkMain(
      argc, argv,
      {"--benchmark_repetitions=5", "--benchmark_display_aggregates_only=true", "--benchmark_min_time=0.1"},
      register_all);
}
