// PrefillScaling/15M/tokens:256: the prefill's thread scaling judged against what
// the pool can do right now. Every iteration runs the prefill on one thread and on
// two (in alternating order), and the register-only FMA probe as tasks of the same
// two pools (ParallelFmaProbe), so a neighbour that takes the second core for a
// while slows the prefill and the probe alike:
//   two_over_one_threads             prefill time 1 thread / 2 threads
//   pool_probe_two_over_one_threads  the same for pure arithmetic on the pools
//   scaling_over_pool_probe          the quotient (1.0 = the prefill scales as well
//                                    as arithmetic does on this pool at this moment)
// A prefill 1-thread row and a 2-thread row measured apart (Prefill/15M/...) say as
// much about the neighbour as about the engine.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include "alternating_timing.h"
#include "bench_session.h"
#include "engine_benchmarks.h"
#include "kv/decoder_kv_cache.h"
#include "session/decoder_kv_session.h"
#include "kvrt/machine/machine_limits.h"
#include "synthetic_models.h"

namespace kvrt::bench {
namespace {

struct Sides {
  double one_thread = 0;
  double two_threads = 0;
  double Speedup() const { return one_thread / two_threads; }
};

void PrefillScaling(benchmark::State& state, const ModelShape* shape, size_t tokens,
                    threading::ThreadPool* one_thread, threading::ThreadPool* two_threads) {
  const DecoderModel& model = SyntheticModel(*shape);
  BenchSession one(model, one_thread), two(model, two_threads);
  const std::vector<uint32_t> prompt = PromptTokens(tokens, shape->vocab);
  one.Prefill(prompt);  // warm: weights, workspace, pages
  two.Prefill(prompt);
  // Probe rounds on one thread: about the FLOPs of the prefill's blocks (2 per
  // weight and token; one round is 16 vector FMAs, 512 FLOPs with AVX-512).
  const size_t block_weights = shape->layers * (4 * shape->dim * shape->dim + 3 * shape->dim * shape->ffn);
  const size_t rounds = std::max<size_t>(1, 2 * block_weights * tokens / 512);
  float sink = 0;
  Sides prefill, probe;
  Alternation alternate;
  for (auto _ : state) {
    auto run_one = [&] {
      prefill.one_thread += SecondsOf([&] { one.Prefill(prompt); });
      probe.one_thread += SecondsOf([&] { machine::ParallelFmaProbe(*one_thread, rounds, &sink); });
    };
    auto run_two = [&] {
      prefill.two_threads += SecondsOf([&] { two.Prefill(prompt); });
      // Twice the work on two threads: its time per unit of work is halved.
      probe.two_threads += SecondsOf([&] { machine::ParallelFmaProbe(*two_threads, 2 * rounds, &sink); }) / 2.0;
    };
    alternate(run_one, run_two);
  }
  benchmark::DoNotOptimize(sink);
  state.counters["two_over_one_threads"] = prefill.Speedup();
  state.counters["pool_probe_two_over_one_threads"] = probe.Speedup();
  state.counters["scaling_over_pool_probe"] = prefill.Speedup() / probe.Speedup();
}

}  // namespace

void RegisterPrefillScalingBenchmarks(threading::ThreadPool& one_thread, threading::ThreadPool& two_threads) {
  const ModelShape& small = ShapeNamed("15M");
  benchmark::RegisterBenchmark("PrefillScaling/15M/tokens:256", PrefillScaling, &small, 256, &one_thread,
                               &two_threads)
      ->UseRealTime()
      ->MinTime(0.5)
      ->Unit(benchmark::kMillisecond);
}

}  // namespace kvrt::bench
