// Attention-row kernels over one lane of the KV cache ([context, head_width] rows,
// stride = head_width): fast (one dispatch per query row) vs twin. And causal
// attention of Q new query rows after C committed rows:
//   CausalAttention/<type>/prefix/...      AttendPrefix per row (the invariant engine's
//                                          decode; its prefill before AttendPrefixRows)
//   CausalAttention/<type>/rows/...        AttendPrefixRows for all Q rows (the invariant
//                                          engine's prefill: the same bits as prefix)
//   CausalAttention/<type>/query_tile/...  AttendQueryTile for all Q rows at once
//                                          (the batch-variant engine's prefill);
// context:1984 crosses the 1024-row tile of the invariant kernels (two passes);
// queries:1 is a decode row, the cost of running decodes through AttendQueryTile.
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>
#include <utility>
#include <algorithm>

#include "kernel_bench_support.h"
#include "kernel_benchmarks.h"
#include "kvrt/simd/attention_scores.h"
#include "kvrt/simd/mix_values.h"
#include "kvrt/simd/prefix_attention.h"
#include "kvrt/simd/query_tile_attention.h"

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

enum class CausalKernel { kPrefix, kRows, kQueryTile };

template <class T, CausalKernel kKernel>
void CausalAttentionRows(State& state, size_t head_width, size_t queries, size_t committed) {
  const size_t n = committed + queries;
  const auto q = RandomRow<T>(queries * head_width, -1, 1, 1);
  const auto keys = RandomRow<T>(n * head_width, -1, 1, 2);
  const auto values = RandomRow<T>(n * head_width, -1, 1, 3);
  auto out = RandomRow<T>(queries * head_width, 0, 1);
  auto scratch = RandomRow<T>(
      std::max(simd::PrefixAttentionRowsScratch(head_width, n), simd::QueryTileAttentionScratch(head_width)), 0, 1);
  const T scale = T(1) / std::sqrt(static_cast<T>(head_width));
  const simd::PrefixSegment<T> cache{keys.get(), values.get(), head_width, committed};
  const T* own_keys = keys.get() + committed * head_width;
  const T* own_values = values.get() + committed * head_width;
  for (auto _ : state) {
    if constexpr (kKernel == CausalKernel::kQueryTile) {
      simd::AttendQueryTile(q.get(), head_width, queries, cache, {own_keys, own_values, head_width, queries},
                            head_width, scale, scratch.get(), out.get(), head_width);
    } else if constexpr (kKernel == CausalKernel::kRows) {
      simd::AttendPrefixRows(q.get(), head_width, queries, cache, {own_keys, own_values, head_width, queries},
                             head_width, scale, scratch.get(), out.get(), head_width);
    } else {
      for (size_t r = 0; r < queries; ++r) {
        simd::AttendPrefix(q.get() + r * head_width, cache, {own_keys, own_values, head_width, r + 1}, head_width,
                           scale, scratch.get(), out.get() + r * head_width);
      }
    }
    benchmark::ClobberMemory();
  }
  // Query-key pairs per iteration.
  const double pairs = static_cast<double>(queries * committed + queries * (queries + 1) / 2);
  SetThroughput(state, pairs, pairs * 2 * static_cast<double>(head_width * sizeof(T)));
}

template <class T>
void RegisterAllForType() {
  for (size_t head_width : {48, 64}) {
    for (const auto& [queries, committed] : {std::pair<size_t, size_t>{64, 0}, {64, 448}, {64, 1984}, {1, 511}}) {
      const std::string shape = "head_width:" + std::to_string(head_width) + "/queries:" + std::to_string(queries) +
                                "/context:" + std::to_string(committed);
      Timed(benchmark::RegisterBenchmark(KernelName<T>("CausalAttention", "prefix", shape).c_str(),
                                         CausalAttentionRows<T, CausalKernel::kPrefix>, head_width, queries,
                                         committed));
      Timed(benchmark::RegisterBenchmark(KernelName<T>("CausalAttention", "rows", shape).c_str(),
                                         CausalAttentionRows<T, CausalKernel::kRows>, head_width, queries,
                                         committed));
      Timed(benchmark::RegisterBenchmark(KernelName<T>("CausalAttention", "query_tile", shape).c_str(),
                                         CausalAttentionRows<T, CausalKernel::kQueryTile>, head_width, queries,
                                         committed));
    }
  }
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
