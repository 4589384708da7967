// Decode at long context per KV cache element type (issue 43), on the 15M, 42M and
// 110M TinyStories shapes with a context of 16,448 positions, q8_0 or bf16 weights:
//   KvDecode/<model>/<weights>/kv:<type>/depth:<d>/threads:<n>
//       decode tokens/s with d positions already in the cache (prefilled once; the
//       slot is rewound to d after every kStepsPerRewind steps, so a step reads d
//       to d + 15 K/V rows a layer). roofline_fraction: the bytes a step reads
//       (the weights in their format plus every layer's K and V rows up to the
//       depth, in the cache's type) over the step's time, against a read probe of
//       the same number of bytes taken before and after every run of steps
//       (paired_roofline.h); kv_share: the K/V part of those bytes.
//   KvDecodeVsF32/<model>/q8_0/kv:<f16|bf16|q8_0>/depth:<d>/threads:<n>
//       the compact cache's decode speed over the f32 cache's at the same depth, the
//       two sessions stepped alternately (speed_over_f32): the perf gate's in-run ratio.
// Select them with --benchmark_filter='^KvDecode' (the 16k rows prefill 16,384
// tokens once per row and repetition: minutes on two cores).
#include <benchmark/benchmark.h>

#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "alternating_timing.h"
#include "bench_session.h"
#include "engine_benchmarks.h"
#include "kv/decoder_kv_cache.h"
#include "kv/kv_element.h"
#include "kvrt/machine/machine_limits.h"
#include "paired_roofline.h"
#include "session/decoder_kv_session.h"
#include "synthetic_models.h"

namespace kvrt::bench {
namespace {

constexpr size_t kStepsPerRewind = 16;

// The TinyStories shapes with room for a 16k-position prompt and its decodes.
const ModelShape& LongShape(const std::string& name) {
  static const ModelShape shapes[] = {
      {"15M/ctx:16448", 288, 6, 6, 768, 32000, 16448},
      {"42M/ctx:16448", 512, 8, 8, 1376, 32000, 16448},
      {"110M/ctx:16448", 768, 12, 12, 2048, 32000, 16448},
  };
  for (const ModelShape& shape : shapes) {
    if (name == shape.name) return shape;
  }
  return shapes[0];
}

BenchSessionOptions CacheOf(KvType type, size_t depth, WeightFormat weights = WeightFormat::kQ8_0) {
  BenchSessionOptions options;
  options.weights = weights;
  options.cache.capacity = depth + kStepsPerRewind + 1;  // the context the row needs, not the model's
  options.cache.kv_type = type;
  return options;
}

// Bytes of K/V one step at `depth` reads (every layer's keys and values of
// depth + 8 rows, the mean over a run of steps).
double KvBytesPerStep(const DecoderModel& model, KvType type, size_t depth) {
  return (static_cast<double>(depth) + kStepsPerRewind / 2.0) *
         static_cast<double>(KvBytesPerPosition(model.config(), Precision::kF32, type));
}

// One decode of the next token; rewinds to `depth` first when a run of steps is over.
class DepthKeeper {
 public:
  DepthKeeper(BenchSession& bound, const std::vector<uint32_t>& tokens, size_t depth)
      : bound_(bound), tokens_(tokens), depth_(depth) {
    bound_.Prefill(std::span(tokens_).first(depth_));
  }
  bool RunOver() const { return steps_ == kStepsPerRewind; }
  void Rewind() {
    if (!bound_.session->TruncateSlot(0, depth_)) throw std::runtime_error("rewind failed");
    steps_ = 0;
  }
  bool Step() { return static_cast<bool>(bound_.session->Decode(tokens_[depth_ + steps_++])); }

 private:
  BenchSession& bound_;
  const std::vector<uint32_t>& tokens_;
  size_t depth_;
  size_t steps_ = 0;
};

void KvDecode(benchmark::State& state, const ModelShape* shape, WeightFormat weights, KvType type, size_t depth,
              threading::ThreadPool* pool) {
  const DecoderModel& model = SyntheticModel(*shape);
  BenchSession bound(model, pool, CacheOf(type, depth, weights));
  const std::vector<uint32_t> tokens = PromptTokens(depth + kStepsPerRewind, shape->vocab);
  DepthKeeper keeper(bound, tokens, depth);
  const double weight_bytes = FormatWeightBytes(model, weights);
  const double kv_bytes = KvBytesPerStep(model, type, depth);
  const double step_bytes = weight_bytes + kv_bytes;
  PairedRoofline roofline([&] { return machine::MeasureSizedReadBytesPerSecond(*pool, static_cast<size_t>(step_bytes)); });
  double seconds = 0;
  size_t steps = 0;
  for (auto _ : state) {
    if (keeper.RunOver()) {
      state.PauseTiming();
      roofline.Segment(static_cast<double>(steps) * step_bytes, seconds);
      seconds = 0;
      steps = 0;
      keeper.Rewind();
      state.ResumeTiming();
    }
    bool ok = true;
    seconds += SecondsOf([&] { ok = keeper.Step(); });
    ++steps;
    if (!ok) state.SkipWithError("decode failed");
  }
  roofline.Segment(static_cast<double>(steps) * step_bytes, seconds);
  const double steps_run = static_cast<double>(state.iterations());
  state.SetItemsProcessed(static_cast<int64_t>(steps_run));
  state.counters["tokens_per_second"] = benchmark::Counter(steps_run, benchmark::Counter::kIsRate);
  state.counters["roofline_fraction"] = roofline.MedianFraction();
  state.counters["read_bw_GBps"] = roofline.best_probe() / 1e9;
  state.counters["weights_and_kv_MB"] = step_bytes / 1e6;
  state.counters["kv_share"] = kv_bytes / step_bytes;
}

void KvDecodeVsF32(benchmark::State& state, const ModelShape* shape, KvType type, size_t depth,
                   threading::ThreadPool* pool) {
  const DecoderModel& model = SyntheticModel(*shape);
  BenchSession f32(model, pool, CacheOf(KvType::kEngine, depth));
  BenchSession compact(model, pool, CacheOf(type, depth));
  const std::vector<uint32_t> tokens = PromptTokens(depth + kStepsPerRewind, shape->vocab);
  DepthKeeper f32_keeper(f32, tokens, depth), compact_keeper(compact, tokens, depth);
  double f32_seconds = 0, compact_seconds = 0;
  Alternation alternate;
  for (auto _ : state) {
    if (compact_keeper.RunOver()) {
      state.PauseTiming();
      f32_keeper.Rewind();
      compact_keeper.Rewind();
      state.ResumeTiming();
    }
    bool ok = true;
    alternate([&] { f32_seconds += SecondsOf([&] { ok = f32_keeper.Step() && ok; }); },
              [&] { compact_seconds += SecondsOf([&] { ok = compact_keeper.Step() && ok; }); });
    if (!ok) state.SkipWithError("decode failed");
  }
  state.counters["speed_over_f32"] = compact_seconds > 0 ? f32_seconds / compact_seconds : 0;
  state.counters["tokens_per_second"] =
      compact_seconds > 0 ? static_cast<double>(state.iterations()) / compact_seconds : 0;
  state.counters["f32_tokens_per_second"] =
      f32_seconds > 0 ? static_cast<double>(state.iterations()) / f32_seconds : 0;
}

}  // namespace

void RegisterKvCacheBenchmarks(threading::ThreadPool& one_thread, threading::ThreadPool& two_threads) {
  for (const char* name : {"15M/ctx:16448", "42M/ctx:16448", "110M/ctx:16448"}) {
    const ModelShape& shape = LongShape(name);
    for (threading::ThreadPool* pool : {&one_thread, &two_threads}) {
      const std::string threads = "/threads:" + std::to_string(pool->threads());
      for (const size_t depth : {size_t{1}, size_t{1024}, size_t{4096}, size_t{16384}}) {
        for (const WeightFormat weights : {WeightFormat::kQ8_0, WeightFormat::kBf16}) {
          for (const KvType type : {KvType::kEngine, KvType::kF16, KvType::kBf16, KvType::kQ8_0}) {
            const std::string kv = type == KvType::kEngine ? "f32" : std::string(KvTypeName(type));
            const std::string row = "KvDecode/" + std::string(shape.name) + "/" +
                                    std::string(WeightFormatName(weights)) + "/kv:" + kv + "/depth:" +
                                    std::to_string(depth) + threads;
            benchmark::RegisterBenchmark(row.c_str(), KvDecode, &shape, weights, type, depth, pool)
                ->UseRealTime()
                ->Unit(benchmark::kMillisecond);
          }
        }
        for (const KvType type : {KvType::kF16, KvType::kBf16, KvType::kQ8_0}) {
          const std::string ratio = "KvDecodeVsF32/" + std::string(shape.name) + "/q8_0/kv:" +
                                    std::string(KvTypeName(type)) + "/depth:" + std::to_string(depth) + threads;
          benchmark::RegisterBenchmark(ratio.c_str(), KvDecodeVsF32, &shape, type, depth, pool)
              ->UseRealTime()
              ->Unit(benchmark::kMillisecond);
        }
      }
    }
  }
}

}  // namespace kvrt::bench
