// bench_memory: a session's resident growth against its context (15M shape), and
// the peak resident set of an end-to-end run on the 110M shape (f32,
// context 1024: a 512-token prefill, then decodes until the context is full),
// reported next to the bytes it cannot avoid: the packed weights and the KV cache.
// A process of its own, because the peak resident set is per process.
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

#include <memory>

#include "kv/decoder_kv_cache.h"
#include "session/decoder_kv_session.h"
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
    DecoderKvSession session = *Bind(*cache, model, engine);
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

// Resident bytes now (not the peak): /proc/self/statm's second field, in pages.
double ResidentBytes() {
  long pages = 0, resident = 0;
  if (FILE* statm = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(statm, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(statm);
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

// What one session costs beside the model, against its context: the resident
// growth from bind through a 64-token prefill and 16 decodes. Only the KV cache
// may grow with the context; the workspace is sized by rows per step.
void SessionResidentSet(benchmark::State& state) {
  const size_t context = static_cast<size_t>(state.range(0));
  ModelShape shape = ShapeNamed("15M");
  shape.name = "15M, context 32768";
  shape.context = 32768;
  threading::ThreadPool pool(2);
  const DecoderModel& model = SyntheticModel(shape);
  {
    // The model packs its weights on first bind: do that before measuring.
    auto warm = std::make_unique<DecoderKvCache>(*DecoderKvCache::Create(model, CacheOptions{1, 128}));
    EngineOptions engine;
    engine.pool = &pool;
    const std::vector<uint32_t> one = {1};
    DecoderKvSession session = *Bind(*warm, model, engine);
    if (!session.Prefill(one)) state.SkipWithError("warm-up prefill failed");
  }
  for (auto _ : state) {
    const double before = ResidentBytes();
    CacheOptions cache_options;
    cache_options.capacity = context;
    auto cache = std::make_unique<DecoderKvCache>(*DecoderKvCache::Create(model, cache_options));
    EngineOptions engine;
    engine.pool = &pool;
    DecoderKvSession session = *Bind(*cache, model, engine);
    const std::vector<uint32_t> tokens = PromptTokens(80, shape.vocab);
    if (!session.Prefill(std::span<const uint32_t>(tokens).first(64))) state.SkipWithError("prefill failed");
    for (size_t position = 64; position < 80; ++position) {
      if (!session.Decode(tokens[position])) state.SkipWithError("decode failed");
    }
    const double grown = ResidentBytes() - before;
    const double kv = static_cast<double>(cache->storage_bytes());
    state.counters["context"] = static_cast<double>(context);
    state.counters["kv_cache_MB"] = kv / 1e6;
    state.counters["session_rss_MB"] = grown / 1e6;
    // The cache is allocated whole but backed only where rows were written, so
    // the resident growth beyond the rows' bytes is the workspace and bookkeeping.
    state.counters["rss_beyond_kv_MB"] = (grown - kv * 80.0 / static_cast<double>(context)) / 1e6;
  }
}

BENCHMARK(SessionResidentSet)->Arg(1024)->Arg(8192)->Arg(32768)->Iterations(1)->Unit(benchmark::kMillisecond);

BENCHMARK_CAPTURE(PeakResidentSet, 110M, "110M")->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
}  // namespace kvrt::bench

BENCHMARK_MAIN();
