// Engine benchmarks on the TinyStories-shaped synthetic models (f32, fast engine):
//   DecodeScaling/<model>/t:<t>        a cached decode step (mean of the last 8 up
//                                      to t) vs a complete-prefix replay at context t
//                                      (counters: both times and their ratio; the
//                                      row's time is the cached step)
//   Prefill/<model>/tokens:<T>/threads:<n>   prefill throughput
//   Prefill/<model>/tokens:<T>/threads:<n>/mode:invariant|fast   the same, batch-
//                                      invariant (the default) against the opt-in
//                                      batch-variant attention
//                                      (EngineOptions::batch_invariant = false): the
//                                      invariance cost is the ratio of a pair
//                                      (--benchmark_filter='/mode:'); the fast row's
//                                      fast_over_invariant counter is the same ratio
//                                      measured interleaved (an invariant prefill,
//                                      untimed, after every fast one), which drifts
//                                      in the machine's load affect alike
//   EndToEnd/<model>/decode|prefill/threads:<n>   tokens/s with the fraction of the
//                                      roofline measured in the same run: decode
//                                      against the read bandwidth over a buffer the
//                                      size of its weights / weight bytes per token,
//                                      probed around every run of decode steps
//                                      (paired_roofline.h; fraction_of_best_probe:
//                                      against the best reading), with the DRAM
//                                      bandwidth and the parallel loops per token
//                                      beside it; prefill against FMA peak / 2·params.
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "alternating_timing.h"
#include "bench_session.h"
#include "engine_benchmarks.h"
#include "kv/decoder_kv_cache.h"
#include "session/decoder_kv_session.h"
#include "kvrt/machine/machine_limits.h"
#include "paired_roofline.h"
#include "synthetic_models.h"

namespace kvrt::bench {
namespace {

// Pages in (once) the buffer the read-bandwidth probe streams.
const void* BandwidthBuffer() {
  static void* buffer = [] {
    void* memory = std::aligned_alloc(64, machine::BandwidthProbeBytes());
    std::memset(memory, 1, machine::BandwidthProbeBytes());
    return memory;
  }();
  return buffer;
}

void DecodeScaling(benchmark::State& state, const ModelShape* shape, size_t context,
                   threading::ThreadPool* pool) {
  const DecoderModel& model = SyntheticModel(*shape);
  BenchSession bound(model, pool);
  const std::vector<uint32_t> prompt = PromptTokens(context, shape->vocab);
  // The cached side averages the last few decode steps up to `context`: a single
  // step right after a prefill mostly measures how much of the weights that
  // prefill evicted from the caches, not the step itself.
  constexpr size_t kDecodeSteps = 8;
  const std::span<const uint32_t> all(prompt), cached_prefix = all.first(context - kDecodeSteps);
  double cached = 0, replay = 0;
  for (auto _ : state) {
    // The complete-prefix replay: logits of all `context` tokens from scratch.
    const double replay_step = SecondsOf([&] { bound.Prefill(all); });
    // The cached steps: decode the last tokens one at a time onto the cache.
    bound.Prefill(cached_prefix);
    const double cached_step = SecondsOf([&] {
      for (size_t i = context - kDecodeSteps; i < context; ++i) {
        if (!bound.session->Decode(prompt[i])) state.SkipWithError("decode failed");
      }
    }) / kDecodeSteps;
    state.SetIterationTime(cached_step);
    cached += cached_step;
    replay += replay_step;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["cached_step_ms"] = 1e3 * cached / n;
  state.counters["replay_step_ms"] = 1e3 * replay / n;
  state.counters["replay_over_cached"] = replay / cached;
  state.counters["context"] = static_cast<double>(context);
}

void Prefill(benchmark::State& state, const ModelShape* shape, size_t tokens, threading::ThreadPool* pool,
             bool batch_invariant) {
  const DecoderModel& model = SyntheticModel(*shape);
  BenchSessionOptions options;
  options.batch_invariant = batch_invariant;
  BenchSession bound(model, pool, options);
  const std::vector<uint32_t> prompt = PromptTokens(tokens, shape->vocab);
  for (auto _ : state) bound.Prefill(prompt);
  state.SetItemsProcessed(static_cast<int64_t>(tokens * state.iterations()));
  state.counters["tokens_per_second"] =
      benchmark::Counter(static_cast<double>(tokens * state.iterations()), benchmark::Counter::kIsRate);
}

// The fast row of a mode pair: the batch-variant prefill, timed, and after each
// one the invariant prefill of the same prompt outside the row's time, both
// clocked here for their interleaved ratio.
void PrefillFastAgainstInvariant(benchmark::State& state, const ModelShape* shape, size_t tokens,
                                 threading::ThreadPool* pool) {
  const DecoderModel& model = SyntheticModel(*shape);
  BenchSessionOptions variant;
  variant.batch_invariant = false;
  BenchSession fast(model, pool, variant);
  BenchSession invariant(model, pool);
  const std::vector<uint32_t> prompt = PromptTokens(tokens, shape->vocab);
  double fast_seconds = 0, invariant_seconds = 0;
  for (auto _ : state) {
    fast_seconds += SecondsOf([&] { fast.Prefill(prompt); });
    state.PauseTiming();
    invariant_seconds += SecondsOf([&] { invariant.Prefill(prompt); });
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(tokens * state.iterations()));
  state.counters["tokens_per_second"] =
      benchmark::Counter(static_cast<double>(tokens * state.iterations()), benchmark::Counter::kIsRate);
  state.counters["fast_over_invariant"] = fast_seconds / invariant_seconds;
}

// items_per_second, tokens_per_second and roofline_fraction of an EndToEnd row,
// all as rates over the one time Google Benchmark measured for the row (wall time:
// the rows are UseRealTime). Rates computed here from a clock of our own once
// disagreed with items_per_second, which the library divided by CPU time.
void SetTokenRates(benchmark::State& state, double tokens, double roofline_tokens_per_second) {
  state.SetItemsProcessed(static_cast<int64_t>(tokens));
  state.counters["tokens_per_second"] = benchmark::Counter(tokens, benchmark::Counter::kIsRate);
  state.counters["roofline_fraction"] =
      benchmark::Counter(tokens / roofline_tokens_per_second, benchmark::Counter::kIsRate);
  state.counters["roofline_tokens_per_second"] = roofline_tokens_per_second;
}

void EndToEndDecode(benchmark::State& state, const ModelShape* shape, threading::ThreadPool* pool) {
  constexpr size_t kPrompt = 64, kDecodesPerPrompt = 256;
  const DecoderModel& model = SyntheticModel(*shape);
  BenchSession bound(model, pool);
  const std::vector<uint32_t> prompt = PromptTokens(kPrompt + kDecodesPerPrompt, shape->vocab);
  const double weight_bytes = WeightBytesPerToken(model);
  const double dram_bandwidth = machine::MeasureReadBytesPerSecond(*pool, BandwidthBuffer(), machine::BandwidthProbeBytes());
  // The roofline reads as many bytes as a step reads weights: from the LLC as far
  // as they fit there, which a DRAM-sized probe would not credit. It is probed
  // around every run of decode steps (paired_roofline.h).
  PairedRoofline roofline([&] { return machine::MeasureSizedReadBytesPerSecond(*pool, static_cast<size_t>(weight_bytes)); });
  if (roofline.last_probe() <= 0) state.SkipWithError("no buffer for the bandwidth probe");
  uint64_t regions = 0;  // parallel loops of the timed decode steps
  const double step_seconds =
      DecodeInSegments(state, bound, prompt, kPrompt, kDecodesPerPrompt, weight_bytes, roofline, [&](uint32_t token) {
        const uint64_t before = pool->parallel_regions();
        if (!bound.session->Decode(token)) state.SkipWithError("decode failed");
        regions += pool->parallel_regions() - before;
      });
  const double bandwidth = roofline.best_probe();
  SetTokenRates(state, static_cast<double>(state.iterations()), bandwidth / weight_bytes);
  roofline.Report(state, "fraction_of_best_probe");
  state.counters["read_bw_GBps"] = bandwidth / 1e9;
  state.counters["dram_read_bw_GBps"] = dram_bandwidth / 1e9;
  state.counters["weight_MB"] = weight_bytes / 1e6;
  state.counters["parallel_regions_per_token"] =
      static_cast<double>(regions) / static_cast<double>(state.iterations());
  // What the regions' forks and joins alone cost a step: an empty region of 8 tasks
  // (most regions of a 15M step have 3–12, attention one a head, the head 125) times
  // the regions of a step, over the step's time: the most that fusing regions could
  // save.
  const double region_seconds = machine::MeasureRegionSeconds(*pool, 8);
  state.counters["empty_region_us"] = region_seconds * 1e6;
  if (step_seconds > 0) {
    state.counters["region_share_of_step"] = static_cast<double>(regions) * region_seconds / step_seconds;
  }
}

void EndToEndPrefill(benchmark::State& state, const ModelShape* shape, threading::ThreadPool* pool) {
  constexpr size_t kTokens = 512;
  const DecoderModel& model = SyntheticModel(*shape);
  BenchSession bound(model, pool);
  const std::vector<uint32_t> prompt = PromptTokens(kTokens, shape->vocab);
  const double peak = machine::MeasureFmaFlopsPerSecond(*pool);
  for (auto _ : state) bound.Prefill(prompt);
  const double roofline = peak / (2.0 * ParameterCount(model));
  SetTokenRates(state, static_cast<double>(kTokens * state.iterations()), roofline);
  state.counters["fma_peak_GFLOPs"] = peak / 1e9;
}

}  // namespace

void RegisterEngineBenchmarks(threading::ThreadPool& one_thread, threading::ThreadPool& two_threads) {
  const ModelShape& small = ShapeNamed("15M");
  for (size_t context : {64, 128, 256, 512, 1024}) {
    benchmark::RegisterBenchmark(("DecodeScaling/15M/t:" + std::to_string(context)).c_str(), DecodeScaling, &small,
                                 context, &one_thread)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  for (threading::ThreadPool* pool : {&one_thread, &two_threads}) {
    const std::string threads = "/threads:" + std::to_string(pool->threads());
    for (size_t tokens : {32, 64, 128, 256, 512, 1024}) {
      benchmark::RegisterBenchmark(("Prefill/15M/tokens:" + std::to_string(tokens) + threads).c_str(), Prefill,
                                   &small, tokens, pool, true)
          ->Unit(benchmark::kMillisecond);
    }
    // The invariance cost: each pair differs only in EngineOptions::batch_invariant.
    const std::pair<const char*, size_t> mode_rows[] = {{"15M", 256}, {"15M", 512}, {"15M", 1024}, {"110M", 512}};
    for (const auto& [name, tokens] : mode_rows) {
      for (const bool invariant : {true, false}) {
        const std::string row = "Prefill/" + std::string(name) + "/tokens:" + std::to_string(tokens) + threads +
                                (invariant ? "/mode:invariant" : "/mode:fast");
        if (invariant) {
          benchmark::RegisterBenchmark(row.c_str(), Prefill, &ShapeNamed(name), tokens, pool, true)
              ->Unit(benchmark::kMillisecond);
        } else {
          benchmark::RegisterBenchmark(row.c_str(), PrefillFastAgainstInvariant, &ShapeNamed(name), tokens, pool)
              ->Unit(benchmark::kMillisecond);
        }
      }
    }
    for (const ModelShape& shape : TinyStoriesShapes()) {
      benchmark::RegisterBenchmark(("EndToEnd/" + std::string(shape.name) + "/decode" + threads).c_str(),
                                   EndToEndDecode, &shape, pool)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("EndToEnd/" + std::string(shape.name) + "/prefill" + threads).c_str(),
                                   EndToEndPrefill, &shape, pool)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace kvrt::bench
