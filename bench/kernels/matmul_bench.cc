// MatMul (prefill) over packed weights: 1 and 2 threads over panel ranges, with the
// fraction of the measured FMA peak (per thread), and the twin for reference.
#include <benchmark/benchmark.h>

#include <string>

#include "kernel_bench_support.h"
#include "kernel_benchmarks.h"
#include "kvrt/machine/machine_limits.h"
#include "kvrt/simd/matmul.h"
#include "packed_weights.h"

namespace kvrt::bench {
namespace {

using benchmark::State;

std::string ProductShape(size_t m, size_t rows, size_t cols) {
  return "M:" + std::to_string(m) + "/K:" + std::to_string(rows) + "/N:" + std::to_string(cols);
}

template <class T>
void RegisterFastMatMul(size_t m, size_t rows, size_t cols, threading::ThreadPool& pool) {
  const std::string name = KernelName<T>("MatMul", "fast", ProductShape(m, rows, cols)) +
                           "/threads:" + std::to_string(pool.threads());
  Timed(benchmark::RegisterBenchmark(name.c_str(), [=, &pool](State& state) {
    const PackedWeights<T> w(rows, cols);
    const auto a = RandomRow<T>(m * rows, -1, 1);
    auto c = RandomRow<T>(m * cols, 0, 1);
    // The f32 FMA peak of these threads now; an f64 FMA does half the FLOPs.
    const double peak = machine::MeasureFmaFlopsPerSecond(pool) * (sizeof(T) == 4 ? 1.0 : 0.5);
    const LoopClock clock;
    for (auto _ : state) {
      ForEachPanelRange(pool, w.view.panels(), [&](size_t begin, size_t end) {
        simd::MatMul(a.get(), rows, m, w.view, c.get(), cols, begin, end);
      });
      benchmark::ClobberMemory();
    }
    const double flops = 2.0 * static_cast<double>(m * rows * cols);
    SetThroughput(state, static_cast<double>(m * rows * cols),
                  static_cast<double>((m * rows + m * cols) * sizeof(T) + w.bytes()));
    state.counters["FLOP/s"] = benchmark::Counter(flops * static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate);
    state.counters["fma_peak_fraction"] = clock.FractionOfLimit(state, flops, peak);
    state.counters["peak_FLOP/s"] = peak;
  }));
}

template <class T>
void RegisterTwinMatMul(size_t m, size_t rows, size_t cols) {
  Timed(benchmark::RegisterBenchmark(
      KernelName<T>("MatMul", "twin", ProductShape(m, rows, cols)).c_str(),
      [=](State& state) {
        const PackedWeights<T> w(rows, cols);
        const auto a = RandomRow<T>(m * rows, -1, 1);
        auto c = RandomRow<T>(m * cols, 0, 1);
        for (auto _ : state) {
          simd::MatMulScalar(a.get(), rows, m, w.view, c.get(), cols);
          benchmark::ClobberMemory();
        }
        const double flops = 2.0 * static_cast<double>(m * rows * cols);
        SetThroughput(state, static_cast<double>(m * rows * cols),
                      static_cast<double>((m * rows + m * cols) * sizeof(T) + w.bytes()));
        state.counters["FLOP/s"] = benchmark::Counter(
            flops * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
      }));
}

template <class T>
void RegisterAllForType(threading::ThreadPool& one_thread, threading::ThreadPool& two_threads) {
  // The target shape, on one and two threads.
  RegisterFastMatMul<T>(512, 768, 768, one_thread);
  RegisterFastMatMul<T>(512, 768, 768, two_threads);
  // Short prompts and the FFN shapes of a 768-wide model.
  RegisterFastMatMul<T>(16, 768, 768, one_thread);
  RegisterFastMatMul<T>(64, 768, 768, one_thread);
  RegisterFastMatMul<T>(512, 768, 2048, one_thread);
  RegisterFastMatMul<T>(512, 2048, 768, one_thread);
  RegisterTwinMatMul<T>(64, 768, 768);
}

}  // namespace

void RegisterMatMulBenchmarks(threading::ThreadPool& one_thread,
                              threading::ThreadPool& two_threads) {
  RegisterAllForType<float>(one_thread, two_threads);
  RegisterAllForType<double>(one_thread, two_threads);
}

}  // namespace kvrt::bench
