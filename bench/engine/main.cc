// bench_engine: decode scaling with the context (cached vs complete-prefix replay),
// prefill throughput vs prompt length and threads, and end-to-end tokens/s of the
// 15M/42M/110M shapes against the roofline measured in the same run, the same
// per weight format (Weights/..., select with --benchmark_filter='^Weights/'),
// aggregate decode throughput of 1–32 sequences decoding together in slots, decode
// at long context per KV cache type (KvDecode), and the twins of `kvrt bench`'s
// decode rows that check its timing (BenchMirror).
//
// Unless the command line says otherwise, every row runs 3 repetitions and shows
// only the aggregates: read the medians.
#include "bench_main.h"
#include "engine_benchmarks.h"
#include "kvrt/threading/thread_pool.h"

int main(int argc, char** argv) {
  kvrt::threading::ThreadPool one_thread(1);
  kvrt::threading::ThreadPool two_threads(2);
  return kvrt::bench::RunBenchmarkMain(
      argc, argv, {"--benchmark_repetitions=3", "--benchmark_display_aggregates_only=true"},
      [&] {
        kvrt::bench::RegisterEngineBenchmarks(one_thread, two_threads);
        kvrt::bench::RegisterWeightBenchmarks(one_thread, two_threads);
        kvrt::bench::RegisterBatchingBenchmarks(one_thread, two_threads);
        kvrt::bench::RegisterPrefillScalingBenchmarks(one_thread, two_threads);
        kvrt::bench::RegisterKvCacheBenchmarks(one_thread, two_threads);
        kvrt::bench::RegisterBenchMirrorBenchmarks(one_thread, two_threads);
      });
}
