// bench_memory: the peak resident set of an end-to-end run on the 110M shape (f32,
// context 1024: a 512-token prefill, then decodes until the context is full),
// reported next to the bytes it cannot avoid: the packed weights and the KV cache.
// A process of its own, because the peak resident set is per process.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <memory>

#include "kvrt/kv_cache.h"
#include "kvrt/session.h"
#include "kvrt/threading/thread_pool.h"
#include "synthetic_models.h"

namespace kvrt::bench {
namespace {

double PeakResidentBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;  // Linux reports KiB
}

void PeakResidentSet(benchmark::State& state, const char* shape_name) {
  const ModelShape& shape = ShapeNamed(shape_name);
  threading::ThreadPool pool(2);
  for (auto _ : state) {
    const DecoderModel& model = SyntheticModel(shape);
    CacheOptions cache_options;
    cache_options.precision = Precision::kF32;
    auto cache = std::make_unique<DecoderKvCache>(*DecoderKvCache::Create(model, cache_options));
    EngineOptions engine;
    engine.backend = Backend::kFast;
    engine.precision = Precision::kF32;
    engine.pool = &pool;
    DecoderKvSession session = *cache->Bind(model, engine);
    const std::vector<uint32_t> tokens = PromptTokens(shape.context, shape.vocab);
    if (!session.Prefill(std::span<const uint32_t>(tokens).first(512))) state.SkipWithError("prefill failed");
    for (size_t position = 512; position < shape.context; ++position) {
      if (!session.Decode(tokens[position])) state.SkipWithError("decode failed");
    }
    const double weights = WeightBytesPerToken(model);  // f32 panels, no padding for these shapes
    const double kv = static_cast<double>(cache->storage_bytes());
    const double peak = PeakResidentBytes();
    state.counters["packed_weights_MB"] = weights / 1e6;
    state.counters["kv_cache_MB"] = kv / 1e6;
    state.counters["peak_rss_MB"] = peak / 1e6;
    state.counters["budget_MB"] = 1.15 * (weights + kv) / 1e6;
    state.counters["rss_over_weights_plus_kv"] = peak / (weights + kv);
  }
}

BENCHMARK_CAPTURE(PeakResidentSet, 110M, "110M")->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
}  // namespace kvrt::bench

BENCHMARK_MAIN();
