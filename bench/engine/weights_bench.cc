// Weight-format benchmarks on the TinyStories shapes (fast f32 engine):
//   Weights/<model>/<format>/decode/threads:<n>    decode tokens/s; roofline_fraction
//       against a read-bandwidth probe over a freshly allocated, paged-in buffer of
//       the SAME size as the model's weights in that format (a q4_0 110M fits the
//       large shared L3, so a DRAM-only roofline would overstate what is possible),
//       taken before and after every run of decode steps between two prefills
//       (paired_roofline.h: the median over those runs of their fraction of the
//       probes around them; fraction_of_best_probe divides by the best reading);
//       weights_and_kv_fraction adds the f32 K/V rows a step also reads (the context
//       averages 192 positions here: 14 MB a token on 110M, a fifth of its q4_0 weights);
//       kv_bound and fma_bound are two ceilings of roofline_fraction measured in the
//       run: weights / (weights + K/V bytes), and the in-run FMA peak's one lane per
//       weight (f32 activations) in bytes/s over the probe's
//   Weights/<model>/<format>/prefill/threads:<n>   512-token prefill tokens/s;
//       roofline_fraction = FLOPs executed / (time × in-run f32 FMA peak), the peak
//       probed before and after every prefill (the median over the prefills;
//       fraction_of_best_peak divides by the best reading), FLOPs
//       counted as executed: 2·T per weight of the blocks, the T²-triangle of
//       attention, the head once (only the last row reaches the vocabulary)
// Formats: f32, bf16, f16, q8_0, q4_0, converted at load, and q8_0+int8, q4_0+int8:
// the same weights with the opt-in int8 activations (EngineOptions::int8_activations,
// less exact; the same bytes per weight, so the same roofline). Select them with
// --benchmark_filter='^Weights/' (CI's perf gate does not run them).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "alternating_timing.h"
#include "bench_session.h"
#include "engine_benchmarks.h"
#include "kv/decoder_kv_cache.h"
#include "session/decoder_kv_session.h"
#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/simd/packed_matrix.h"
#include "kvrt/weight_format.h"
#include "kvrt/machine/machine_limits.h"
#include "paired_roofline.h"
#include "weights/compressed_format.h"
#include "synthetic_models.h"
#include "weights/weight_plan.h"

namespace kvrt::bench {

double FormatWeightBytes(const DecoderModel& model, WeightFormat format) {
  double bytes = 0;
  for (const MatrixWeightFormat& matrix : PlanWeightFormats(model, format)) {
    const std::optional<simd::CompressedFormat> type = detail::CompressedFormatOf(matrix.effective);
    bytes += type ? static_cast<double>(simd::CompressedMatrixBytes(*type, matrix.rows, matrix.cols))
                  : 4.0 * static_cast<double>(simd::PackedElementCount<float>(matrix.rows, matrix.cols));
  }
  for (const ParameterPtr& parameter : model.parameters()) {
    if (parameter->shape().size() == 1) bytes += 4.0 * static_cast<double>(parameter->element_count());
  }
  return bytes;
}

namespace {

constexpr WeightFormat kFormats[] = {WeightFormat::kF32, WeightFormat::kBf16, WeightFormat::kF16,
                                     WeightFormat::kQ8_0, WeightFormat::kQ4_0};

// The weights FormatWeightBytes counts: every planned matrix and the gains.
double FormatWeightCount(const DecoderModel& model, WeightFormat format) {
  double count = 0;
  for (const MatrixWeightFormat& matrix : PlanWeightFormats(model, format)) {
    count += static_cast<double>(matrix.rows) * static_cast<double>(matrix.cols);
  }
  for (const ParameterPtr& parameter : model.parameters()) {
    if (parameter->shape().size() == 1) count += static_cast<double>(parameter->element_count());
  }
  return count;
}

void SetRates(benchmark::State& state, double tokens, double roofline_tokens_per_second) {
  state.SetItemsProcessed(static_cast<int64_t>(tokens));
  state.counters["tokens_per_second"] = benchmark::Counter(tokens, benchmark::Counter::kIsRate);
  state.counters["roofline_fraction"] =
      benchmark::Counter(tokens / roofline_tokens_per_second, benchmark::Counter::kIsRate);
  state.counters["roofline_tokens_per_second"] = roofline_tokens_per_second;
}

void WeightsDecode(benchmark::State& state, const ModelShape* shape, WeightFormat format,
                   threading::ThreadPool* pool, bool int8_activations) {
  constexpr size_t kPrompt = 64, kDecodesPerPrompt = 256;
  const DecoderModel& model = SyntheticModel(*shape);
  BenchSessionOptions options;
  options.weights = format;
  options.int8_activations = int8_activations;
  BenchSession bound(model, pool, options);
  const std::vector<uint32_t> prompt = PromptTokens(kPrompt + kDecodesPerPrompt, shape->vocab);
  const double weight_bytes = FormatWeightBytes(model, format);
  PairedRoofline roofline([&] { return machine::MeasureSizedReadBytesPerSecond(*pool, static_cast<size_t>(weight_bytes)); });
  if (roofline.last_probe() <= 0) {
    state.SkipWithError("no buffer for the bandwidth probe");
    return;
  }
  DecodeInSegments(state, bound, prompt, kPrompt, kDecodesPerPrompt, weight_bytes, roofline, [&](uint32_t token) {
    if (!bound.session->Decode(token)) state.SkipWithError("decode failed");
  });
  const double bandwidth = roofline.best_probe();
  SetRates(state, static_cast<double>(state.iterations()), bandwidth / weight_bytes);
  roofline.Report(state, "fraction_of_best_probe");
  // Keys and values of every layer at the average context of the timed decodes (no GQA).
  const double kv_bytes = static_cast<double>(shape->layers) * (kPrompt + kDecodesPerPrompt / 2.0) * 2.0 *
                          static_cast<double>(shape->dim) * sizeof(float);
  state.counters["weights_and_kv_fraction"] =
      roofline.MedianFraction() * (weight_bytes + kv_bytes) / weight_bytes;
  state.counters["read_bw_GBps"] = bandwidth / 1e9;
  state.counters["weight_MB"] = weight_bytes / 1e6;
  state.counters["kv_MB_per_token"] = kv_bytes / 1e6;
  // Ceilings of roofline_fraction on this machine, measured in this run (bounds,
  // not predictions: no kernel passes them, whatever it does):
  //   kv_bound   a step also reads its f32 K/V rows, at best at the probe's bandwidth;
  //   fma_bound  with f32 activations every weight takes one lane of an FMA, so the
  //              weights cannot be consumed faster than the in-run FMA peak / 2
  //              (int8 activations take four per lane of VPDPBUSD: not reported).
  state.counters["kv_bound"] = weight_bytes / (weight_bytes + kv_bytes);
  if (!int8_activations) {
    const double weights_per_second = machine::MeasureFmaFlopsPerSecond(*pool) / 2.0;
    const double bytes_per_weight = weight_bytes / FormatWeightCount(model, format);
    state.counters["fma_bound"] = weights_per_second * bytes_per_weight / bandwidth;
  }
}

// FLOPs of a T-token prefill from position 0, as the engine executes them.
double PrefillFlops(const ModelShape& shape, size_t tokens) {
  const double t = static_cast<double>(tokens), d = static_cast<double>(shape.dim);
  const double f = static_cast<double>(shape.ffn), l = static_cast<double>(shape.layers);
  const double block_weights = 4 * d * d + 3 * d * f;  // q, k, v, o (no GQA), gate, up, down
  const double attention = 2.0 * t * (t + 1) / 2 * d * 2;  // scores and mix, causal triangle
  return l * (2 * t * block_weights + attention) + 2 * d * static_cast<double>(shape.vocab);
}

void WeightsPrefill(benchmark::State& state, const ModelShape* shape, WeightFormat format,
                    threading::ThreadPool* pool, bool int8_activations) {
  constexpr size_t kTokens = 512;
  const DecoderModel& model = SyntheticModel(*shape);
  BenchSessionOptions options;
  options.weights = format;
  options.int8_activations = int8_activations;
  BenchSession bound(model, pool, options);
  const std::vector<uint32_t> prompt = PromptTokens(kTokens, shape->vocab);
  const double flops = PrefillFlops(*shape, kTokens);
  PairedRoofline roofline([&] { return machine::MeasureFmaFlopsPerSecond(*pool); });
  for (auto _ : state) {
    const double seconds = SecondsOf([&] { bound.Prefill(prompt); });
    state.PauseTiming();
    roofline.Segment(flops, seconds);
    state.ResumeTiming();
  }
  const double peak = roofline.best_probe();
  SetRates(state, static_cast<double>(kTokens * state.iterations()), peak / flops * kTokens);
  roofline.Report(state, "fraction_of_best_peak");
  state.counters["fma_peak_GFLOPs"] = peak / 1e9;
}

}  // namespace

void RegisterWeightBenchmarks(threading::ThreadPool& one_thread, threading::ThreadPool& two_threads) {
  for (const ModelShape& shape : TinyStoriesShapes()) {
    for (const bool int8 : {false, true}) {
      for (WeightFormat format : kFormats) {
        if (int8 && format != WeightFormat::kQ8_0 && format != WeightFormat::kQ4_0) continue;
        for (threading::ThreadPool* pool : {&one_thread, &two_threads}) {
          const std::string name = "Weights/" + std::string(shape.name) + "/" +
                                   std::string(WeightFormatName(format)) + (int8 ? "+int8/" : "/");
          const std::string threads = "/threads:" + std::to_string(pool->threads());
          benchmark::RegisterBenchmark((name + "decode" + threads).c_str(), WeightsDecode, &shape, format, pool,
                                       int8)
              ->UseRealTime()
              ->Unit(benchmark::kMillisecond);
          benchmark::RegisterBenchmark((name + "prefill" + threads).c_str(), WeightsPrefill, &shape, format,
                                       pool, int8)
              ->UseRealTime()
              ->Unit(benchmark::kMillisecond);
        }
      }
    }
  }
}

}  // namespace kvrt::bench
