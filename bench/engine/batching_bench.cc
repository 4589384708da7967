// Serving-shaped decode: B sequences in B slots of one cache, every
// step one decode token per sequence (one DecoderKvSession::Step, so each weight
// matrix is read once for all B rows: a matrix product with M = B).
//   BatchedDecode/<model>/seqs:<B>/threads:<n>
// Counters: aggregate decode tokens/s over all sequences, and the per-sequence
// latency of one step (every sequence gets one token per step). The contexts are
// short and different per sequence (prompts of 16 + 3·b tokens), reset every 64
// steps, so the weights dominate as in the EndToEnd decode rows.
#include <benchmark/benchmark.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "alternating_timing.h"
#include "bench_session.h"
#include "engine_benchmarks.h"
#include "kv/decoder_kv_cache.h"
#include "session/decoder_kv_session.h"
#include "synthetic_models.h"

namespace kvrt::bench {
namespace {

constexpr size_t kStepsPerFill = 64;

void BatchedDecode(benchmark::State& state, const ModelShape* shape, size_t sequences,
                   threading::ThreadPool* pool) {
  const DecoderModel& model = SyntheticModel(*shape);
  BenchSessionOptions options;
  options.cache.batch_size = sequences;
  options.cache.capacity = 256;
  BenchSession slots(model, pool, options);
  const std::vector<uint32_t> tokens = PromptTokens(16 + 3 * sequences + kStepsPerFill, shape->vocab);
  std::vector<SlotRun> prefill(sequences), decode(sequences);
  size_t steps = 0;
  auto fill = [&] {
    slots.session->Reset();
    for (size_t b = 0; b < sequences; ++b) {
      prefill[b] = {b, std::span<const uint32_t>(tokens).first(16 + 3 * b), RunPhase::kPrefill, true};
      // One prefill step per slot keeps every step within the engine's rows.
      if (!slots.session->Step(std::span(prefill).subspan(b, 1))) throw std::runtime_error("prefill failed");
    }
    steps = 0;
  };
  fill();
  double seconds = 0;
  for (auto _ : state) {
    if (steps == kStepsPerFill) {
      state.PauseTiming();
      fill();
      state.ResumeTiming();
    }
    for (size_t b = 0; b < sequences; ++b) {
      decode[b] = {b, std::span<const uint32_t>(tokens).subspan(16 + 3 * b + steps, 1), RunPhase::kDecode, true};
    }
    seconds += SecondsOf([&] {
      if (!slots.session->Step(decode)) state.SkipWithError("decode step failed");
    });
    ++steps;
  }
  const double n = static_cast<double>(state.iterations());
  state.SetItemsProcessed(static_cast<int64_t>(n * static_cast<double>(sequences)));
  state.counters["decode_tokens_per_second"] =
      benchmark::Counter(n * static_cast<double>(sequences), benchmark::Counter::kIsRate);
  state.counters["sequence_latency_ms"] = 1e3 * seconds / n;  // one token per sequence per step
  state.counters["sequences"] = static_cast<double>(sequences);
}

}  // namespace

void RegisterBatchingBenchmarks(threading::ThreadPool& one_thread, threading::ThreadPool& two_threads) {
  for (const char* name : {"15M", "110M"}) {
    const ModelShape& shape = ShapeNamed(name);
    for (threading::ThreadPool* pool : {&one_thread, &two_threads}) {
      const std::string threads = "/threads:" + std::to_string(pool->threads());
      for (size_t sequences : {1, 2, 4, 8, 16, 32}) {
        benchmark::RegisterBenchmark(
            ("BatchedDecode/" + std::string(name) + "/seqs:" + std::to_string(sequences) + threads).c_str(),
            BatchedDecode, &shape, sequences, pool)
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
}

}  // namespace kvrt::bench
