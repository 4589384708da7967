// Helpers shared by the kernel benchmarks: seeded aligned inputs, names, counters.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>

#include "hwy/aligned_allocator.h"

namespace kvrt::bench {

template <class T>
using AlignedRow = hwy::AlignedFreeUniquePtr<T[]>;

// n values uniform in [lo, hi), 64-byte aligned, from a fixed seed.
template <class T>
AlignedRow<T> RandomRow(size_t n, double lo, double hi, uint64_t seed = 1) {
  auto row = hwy::AllocateAligned<T>(n == 0 ? 1 : n);
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (size_t i = 0; i < n; ++i) row[i] = static_cast<T>(dist(engine));
  return row;
}

template <class T>
const char* TypeName() {
  return sizeof(T) == 4 ? "f32" : "f64";
}

// "Kernel/f32/fast/shape": every fast row has a twin row differing only in "fast".
template <class T>
std::string KernelName(const char* kernel, const char* implementation, const std::string& shape) {
  return std::string(kernel) + "/" + TypeName<T>() + "/" + implementation + "/" + shape;
}

// items/s and bytes/s counters for `items` and `bytes` per iteration.
inline void SetThroughput(benchmark::State& state, double items, double bytes) {
  state.SetItemsProcessed(static_cast<int64_t>(items * static_cast<double>(state.iterations())));
  state.SetBytesProcessed(static_cast<int64_t>(bytes * static_cast<double>(state.iterations())));
}

// Wall-clock time of one benchmark loop, for counters relative to a machine limit.
// Construct it right before `for (auto _ : state)`.
class LoopClock {
 public:
  LoopClock() : start_(std::chrono::steady_clock::now()) {}

  // (amount per second achieved by the loop) / limit_per_second: 1.0 = at the limit.
  double FractionOfLimit(const benchmark::State& state, double amount_per_iteration,
                         double limit_per_second) const {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    return amount_per_iteration * static_cast<double>(state.iterations()) / seconds /
           limit_per_second;
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// Every kernel row is timed in wall-clock time: the threaded rows run on pool
// threads whose CPU time the main thread does not see.
inline benchmark::internal::Benchmark* Timed(benchmark::internal::Benchmark* b) {
  return b->UseRealTime();
}

}  // namespace kvrt::bench
