// Attention-row kernels over one lane of the KV cache ([context, head_width] rows,
// stride = head_width): fast (one dispatch per query row) vs twin.
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>

#include "kernel_bench_support.h"
#include "kernel_benchmarks.h"
#include "kvrt/simd/attention_scores.h"
#include "kvrt/simd/mix_values.h"

namespace kvrt::bench {
namespace {

using benchmark::State;

template <class T, bool kFast>
void AttentionScoresRow(State& state, size_t head_width, size_t count) {
  const auto q = RandomRow<T>(head_width, -1, 1, 1);
  const auto keys = RandomRow<T>(count * head_width, -1, 1, 2);
  auto out = RandomRow<T>(count, 0, 1);
  const T scale = T(1) / std::sqrt(static_cast<T>(head_width));
  for (auto _ : state) {
    if (kFast) {
      simd::AttentionScores(q.get(), keys.get(), head_width, count, head_width, scale, out.get());
    } else {
      simd::AttentionScoresScalar(q.get(), keys.get(), head_width, count, head_width, scale,
                                  out.get());
    }
    benchmark::ClobberMemory();
  }
  SetThroughput(state, static_cast<double>(count * head_width),
                static_cast<double>((count * head_width + count) * sizeof(T)));
}

template <class T, bool kFast>
void MixValuesRow(State& state, size_t head_width, size_t count) {
  const auto weights = RandomRow<T>(count, 0, 2.0 / static_cast<double>(count), 1);
  const auto values = RandomRow<T>(count * head_width, -1, 1, 2);
  auto out = RandomRow<T>(head_width, 0, 1);
  for (auto _ : state) {
    if (kFast) {
      simd::MixValues(weights.get(), values.get(), head_width, count, head_width, out.get());
    } else {
      simd::MixValuesScalar(weights.get(), values.get(), head_width, count, head_width, out.get());
    }
    benchmark::ClobberMemory();
  }
  SetThroughput(state, static_cast<double>(count * head_width),
                static_cast<double>((count * head_width + count) * sizeof(T)));
}

template <class T>
void RegisterAllForType() {
  for (size_t head_width : {64, 128}) {
    for (size_t count : {256, 2048}) {
      const std::string shape =
          "head_width:" + std::to_string(head_width) + "/context:" + std::to_string(count);
      for (bool fast : {true, false}) {
        const char* implementation = fast ? "fast" : "twin";
        Timed(benchmark::RegisterBenchmark(
            KernelName<T>("AttentionScores", implementation, shape).c_str(),
            fast ? AttentionScoresRow<T, true> : AttentionScoresRow<T, false>, head_width, count));
      }
      for (bool fast : {true, false}) {
        const char* implementation = fast ? "fast" : "twin";
        Timed(benchmark::RegisterBenchmark(
            KernelName<T>("MixValues", implementation, shape).c_str(),
            fast ? MixValuesRow<T, true> : MixValuesRow<T, false>, head_width, count));
      }
    }
  }
}

}  // namespace

void RegisterAttentionBenchmarks() {
  RegisterAllForType<float>();
  RegisterAllForType<double>();
}

}  // namespace kvrt::bench
