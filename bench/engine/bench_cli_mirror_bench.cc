// The Google Benchmark twin of `kvrt bench`'s decode rows, written apart from the
// CLI's runner so that the two timings check each other (issue 44):
//   BenchMirror/110M/q8_0/tg<n>@d<d>/seqs:<B>/threads:<t>
// measures what `kvrt bench -m <110M GGUF> --weights q8_0 -n <n> -d <d>
// --sequences <B> -t <t>` measures, through the same public API a user's harness
// would call: the model loaded from a GGUF file, its weights prepared, a session
// of B slots; before every iteration (untimed) the slots are reset and each is
// prefilled with d positions; then n decode steps of one token per slot, timed as
// a whole. tokens_per_second counts B·n tokens an iteration: kvrt bench's "t/s".
//
// The file: KVRT_BENCH_MIRROR_MODEL when set (give it the file kvrt bench ran
// on), else `kvrt synth --shape 110M`'s model (seed 0) written to a temporary file
// once per process. What differs from kvrt bench is the harness only: Google
// Benchmark picks the iteration count and reports over its repetitions; kvrt
// bench runs one warm-up and -r timed runs. Neither probes the machine inside the
// timed runs (the Weights rows do, which is why they are not this comparison).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "alternating_timing.h"
#include "engine_benchmarks.h"
#include "kvrt/load_model.h"
#include "kvrt/session.h"
#include "kvrt/synthetic.h"
#include "synthetic_models.h"

namespace kvrt::bench {
namespace {

constexpr size_t kDecodeSteps = 32;
constexpr size_t kDepth = 64;

// kvrt synth --shape 110M: llama2.c's 110M TinyStories shape, f32, seed 0.
std::string WriteSynth110M() {
  const ModelShape& shape = ShapeNamed("110M");
  const ModelConfig config = ModelConfig::Create(shape.vocab, shape.dim, shape.heads, shape.ffn, shape.layers,
                                                 shape.context, 10000.0, 1e-5);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("kvrt_bench_mirror_" + std::to_string(getpid()) + ".gguf")).string();
  if (Result<void> written = WriteSyntheticGguf(config, /*seed=*/0, WeightFormat::kF32, path); !written) {
    throw std::runtime_error(written.error().message());
  }
  return path;
}

const Model& MirrorModel() {
  static const std::unique_ptr<LoadedModel> loaded = [] {
    const char* named = std::getenv("KVRT_BENCH_MIRROR_MODEL");
    const bool temporary = named == nullptr || *named == '\0';
    const std::string path = temporary ? WriteSynth110M() : std::string(named);
    Result<LoadedModel> model = LoadModel(path);
    if (temporary) std::filesystem::remove(path);
    if (!model) throw std::runtime_error(model.error().message());
    return std::make_unique<LoadedModel>(std::move(*model));
  }();
  return loaded->model;
}

void BenchMirror(benchmark::State& state, WeightFormat weights, size_t sequences, threading::ThreadPool* pool) {
  const Model& model = MirrorModel();
  SessionOptions options;
  options.engine.pool = pool;
  options.engine.weights = weights;
  options.capacity = kDepth + kDecodeSteps;
  options.batch_size = sequences;
  if (!model.PrepareWeights(options.engine)) {
    state.SkipWithError("weight preparation failed");
    return;
  }
  Result<Session> session = Session::Open(model, options);
  if (!session) {
    state.SkipWithError(session.error().message().c_str());
    return;
  }
  // Every slot its own tokens (different rows of the table).
  std::vector<std::vector<uint32_t>> tokens;
  for (size_t b = 0; b < sequences; ++b) {
    std::vector<uint32_t> stream = PromptTokens(kDepth + kDecodeSteps + b, model.config().vocabulary_size);
    tokens.emplace_back(stream.begin() + static_cast<std::ptrdiff_t>(b), stream.end());
  }
  std::vector<SlotRun> runs(sequences);
  // As many slots' whole depths a step as the session's rows allow.
  const size_t slots_per_step = std::max<size_t>(1, session->max_rows_per_step() / kDepth);
  auto prefill_depth = [&] {
    session->Reset();
    for (size_t first = 0; first < sequences; first += slots_per_step) {
      const size_t count = std::min(slots_per_step, sequences - first);
      for (size_t b = first; b < first + count; ++b) {
        runs[b] = {b, std::span<const uint32_t>(tokens[b]).first(kDepth), RunPhase::kPrefill, true};
      }
      if (!session->Step(std::span(runs).subspan(first, count))) return false;
    }
    return true;
  };
  auto decode_steps = [&] {
    for (size_t step = 0; step < kDecodeSteps; ++step) {
      for (size_t b = 0; b < sequences; ++b) {
        runs[b] = {b, std::span<const uint32_t>(tokens[b]).subspan(kDepth + step, 1), RunPhase::kDecode, true};
      }
      if (!session->Step(runs)) return false;
    }
    return true;
  };
  // One untimed pass first, as kvrt bench's warm-up run: a fresh session's first
  // decode steps touch cache rows and scratch for the first time, and on two
  // threads those page faults cost 10-20 % of a 16-slot pass (they serialize in the
  // kernel), which kvrt bench's timed runs, later passes over one session, never pay.
  if (!prefill_depth() || !decode_steps()) {
    state.SkipWithError("warm-up pass failed");
    return;
  }
  for (auto _ : state) {
    if (!prefill_depth()) {
      state.SkipWithError("prefill failed");
      break;
    }
    bool ok = true;
    const double seconds = SecondsOf([&] { ok = decode_steps(); });
    if (!ok) {
      state.SkipWithError("decode step failed");
      break;
    }
    state.SetIterationTime(seconds);
  }
  const double tokens_per_iteration = static_cast<double>(sequences * kDecodeSteps);
  state.counters["tokens_per_second"] =
      benchmark::Counter(tokens_per_iteration * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["sequences"] = static_cast<double>(sequences);
}

}  // namespace

void RegisterBenchMirrorBenchmarks(threading::ThreadPool& one_thread, threading::ThreadPool& two_threads) {
  const std::string test = "/tg" + std::to_string(kDecodeSteps) + "@d" + std::to_string(kDepth);
  for (threading::ThreadPool* pool : {&one_thread, &two_threads}) {
    for (size_t sequences : {1, 4, 16}) {
      const std::string name = "BenchMirror/110M/q8_0" + test + "/seqs:" + std::to_string(sequences) +
                               "/threads:" + std::to_string(pool->threads());
      benchmark::RegisterBenchmark(name.c_str(), BenchMirror, WeightFormat::kQ8_0, sequences, pool)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace kvrt::bench
