// Compressed weights (bf16, f16, q8_0, q4_0, q5_0, q4_1, q5_1, iq4_nl, iq4_xs, q2_k, q3_k, q4_k, q5_k, q6_k;
// simd/compressed_matrix.h):
// MatVec against the roofline that means something for it, the read bandwidth of a buffer
// of the matrix's own size; MatVec fast vs scalar twin; MatMul against the f32 FMA peak, and
// against the f32 MatMul timed alternately (MatMulVsF32 rows, speed_over_f32).
//
// MatVecRoofline rows: the weights are the matrix itself, cache-resident when small
// (768×2048 is 0.9–3 MB, 768×32000 14–49 MB: within a 260 MB L3, and for the smaller
// formats within a 32 MB one). 768×54000 is 23–83 MB, the 42M model's weights in each
// format, so that on a 32 MB L3 a row measures the kernel on the bytes a decode step
// reads from memory, not from the cache (on a Zen 5, 2026-12-03, bf16 read 0.70 of the
// same-bytes read at 768×32000 and 0.81 at 768×54000, one thread). Every
// iteration runs the MatVec and a read of the very same bytes (ParallelChunkedRead,
// split into as many pool tasks as the MatVec), in alternating order, so both see the
// same cache state and the same neighbours; read_bw_fraction is read time / MatVec
// time (1.0 = the kernel streams its weights as fast as a plain read can).
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "alternating_timing.h"
#include "hwy/aligned_allocator.h"
#include "kernel_bench_support.h"
#include "kernel_benchmarks.h"
#include "core/buffer.h"
#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/simd/bf16_activations.h"
#include "kvrt/simd/int8_activations.h"
#include "kvrt/simd/matmul.h"
#include "kvrt/simd/matvec.h"
#include "kvrt/machine/machine_limits.h"
#include "packed_weights.h"

namespace kvrt::bench {
namespace {

using benchmark::State;
using simd::CompressedFormat;

constexpr CompressedFormat kTypes[] = {CompressedFormat::kBf16, CompressedFormat::kF16,
                                       CompressedFormat::kQ8_0, CompressedFormat::kQ4_0,
                                       CompressedFormat::kQ5_0, CompressedFormat::kQ4_1,
                                       CompressedFormat::kQ5_1, CompressedFormat::kIQ4_NL,
                                       CompressedFormat::kIQ4_XS, CompressedFormat::kQ4_K,
                                       CompressedFormat::kQ5_K, CompressedFormat::kQ6_K,
                                       CompressedFormat::kQ3_K, CompressedFormat::kQ2_K};

// A random [K, N] matrix quantized and packed by PackCompressed, 64-byte aligned.
struct CompressedWeights {
  CompressedWeights(CompressedFormat type, size_t rows, size_t cols)
      : bytes(simd::CompressedMatrixBytes(type, rows, cols)),
        storage(hwy::AllocateAligned<uint8_t>(bytes)) {
    const auto dense = RandomRow<float>(rows * cols, -1, 1, rows * 31 + cols);
    simd::PackCompressed(type, dense.get(), rows, cols, false, storage.get());
    view = {type, storage.get(), rows, cols};
    if (simd::HasInt8Quads(type)) {
      quad_storage = hwy::AllocateAligned<uint8_t>(bytes);
      quads = simd::PackInt8Quads(view, quad_storage.get());
    }
    if (simd::HasBf16Pairs(view)) {
      pair_storage = hwy::AllocateAligned<uint8_t>(bytes);
      pairs = simd::PackBf16Pairs(view, pair_storage.get());
    }
  }
  size_t bytes;
  hwy::AlignedFreeUniquePtr<uint8_t[]> storage, quad_storage, pair_storage;
  simd::CompressedMatrixView view;
  simd::CompressedMatrixView quads;  // HasInt8Quads: the int8-activation layout
  simd::CompressedMatrixView pairs;  // HasBf16Pairs: the bf16-activation layout
};

// Activation rows rounded to bf16 pairs for the bf16-activation kernel.
struct Bf16ActivationRows {
  Bf16ActivationRows(size_t m, size_t k) : pairs(hwy::AllocateAligned<uint32_t>(m * k / 2)), rows{pairs.get(), k} {}
  void From(const float* a, size_t m) {
    for (size_t r = 0; r < m; ++r) simd::RoundRowToBf16(a + r * rows.k, rows, r);
  }
  hwy::AlignedFreeUniquePtr<uint32_t[]> pairs;
  simd::Bf16Rows rows;
};

// Activation rows rounded to q8_0 blocks for the int8-activation kernel.
struct QuantizedRows {
  QuantizedRows(size_t m, size_t k)
      : quants(hwy::AllocateAligned<int8_t>(m * k)),
        scales(hwy::AllocateAligned<float>(m * k / simd::kQuantBlock)),
        sums(hwy::AllocateAligned<int32_t>(m * k / simd::kQuantBlock)),
        half_sums(hwy::AllocateAligned<int32_t>(m * k / (simd::kQuantBlock / 2))),
        rows{quants.get(), scales.get(), sums.get(), half_sums.get(), k} {}
  void From(const float* a, size_t m) {
    for (size_t r = 0; r < m; ++r) simd::QuantizeRow(a + r * rows.k, rows, r);
  }
  hwy::AlignedFreeUniquePtr<int8_t[]> quants;
  hwy::AlignedFreeUniquePtr<float[]> scales;
  hwy::AlignedFreeUniquePtr<int32_t[]> sums;
  hwy::AlignedFreeUniquePtr<int32_t[]> half_sums;
  simd::Int8Rows rows;
};

enum class Activations { kF32, kInt8, kBf16 };

std::string TypeAndActivations(CompressedFormat type, Activations activations) {
  const char* suffix = activations == Activations::kInt8   ? "/activations:int8"
                       : activations == Activations::kBf16 ? "/activations:bf16"
                                                           : "";
  return std::string(simd::CompressedFormatName(type)) + suffix;
}

// Packed matrices shared by all rows and repetitions of one run (quantizing 768×32000
// takes longer than measuring it), built on first use; rows run one at a time.
class WeightCache {
 public:
  const CompressedWeights& Get(CompressedFormat type, size_t rows, size_t cols) {
    auto& slot = weights_[{type, rows, cols}];
    if (slot == nullptr) slot = std::make_unique<CompressedWeights>(type, rows, cols);
    return *slot;
  }

 private:
  std::map<std::tuple<CompressedFormat, size_t, size_t>, std::unique_ptr<CompressedWeights>> weights_;
};

std::string Shape(size_t rows, size_t cols) {
  return "K:" + std::to_string(rows) + "/N:" + std::to_string(cols);
}

void RegisterRoofline(CompressedFormat type, size_t rows, size_t cols, threading::ThreadPool& pool,
                      const std::shared_ptr<WeightCache>& cache,
                      Activations activations = Activations::kF32) {
  const std::string name = "MatVecRoofline/" + TypeAndActivations(type, activations) + "/" +
                           Shape(rows, cols) + "/threads:" + std::to_string(pool.threads());
  Timed(benchmark::RegisterBenchmark(name.c_str(), [=, &pool](State& state) {
    const CompressedWeights& w = cache->Get(type, rows, cols);
    const auto x = RandomRow<float>(rows, -1, 1);
    auto y = RandomRow<float>(cols, 0, 1);
    const size_t panels = w.view.panels();
    QuantizedRows quantized(1, rows);
    Bf16ActivationRows rounded(1, rows);
    auto matvec = [&] {
      if (activations == Activations::kBf16) {
        rounded.From(x.get(), 1);
        ForEachPanelRange(pool, panels, [&](size_t begin, size_t end) {
          simd::MatMulBf16(rounded.rows, 0, 1, w.pairs, y.get(), cols, begin, end);
        });
      } else if (activations == Activations::kInt8) {
        quantized.From(x.get(), 1);
        ForEachPanelRange(pool, panels, [&](size_t begin, size_t end) {
          simd::MatMulInt8(quantized.rows, 0, 1, w.quads, y.get(), cols, begin, end);
        });
      } else {
        ForEachPanelRange(pool, panels, [&](size_t begin, size_t end) {
          simd::MatVec(w.view, x.get(), y.get(), begin, end);
        });
      }
      benchmark::ClobberMemory();
    };
    uint32_t checksum = 0;
    auto read = [&] { checksum += machine::ParallelChunkedRead(pool, w.storage.get(), w.bytes, PanelTasks(panels)); };
    matvec();  // both sides start from the same, warm cache
    read();
    double matvec_seconds = 0, read_seconds = 0;
    Alternation alternate;
    for (auto _ : state) {
      alternate([&] { matvec_seconds += SecondsOf(matvec); }, [&] { read_seconds += SecondsOf(read); });
    }
    benchmark::DoNotOptimize(checksum);
    const double iterations = static_cast<double>(state.iterations());
    const double bytes = static_cast<double>(w.bytes);
    state.counters["read_bw_fraction"] = read_seconds / matvec_seconds;
    state.counters["read_bw_bytes/s"] = bytes * iterations / read_seconds;
    state.counters["matvec_bytes/s"] = bytes * iterations / matvec_seconds;
    state.counters["weight_bytes"] = bytes;
  }));
}

// MatVecModelWalk/<type>/<model> rows: the 15M, 42M or 110M model's 43, 57 or 85
// matrices, back to back in one huge-page arena as the engine keeps them
// (runtime/src/weights/weight_arena.h), in a decode step's order (per block q, k, v, o,
// gate, up, down; then the dim×32000 head), in the engine's tasks of four panels: a
// decode step's weight reads without its attention, norms and activations.
// read_bw_fraction is against a read of the same buffers in the same order, alternated
// with the walk; fraction_of_sized_probe against one read of a fresh buffer of the same
// size taken after the row (the decode rows' roofline, bench/engine/weights_bench.cc),
// so that the gap between a decode row and this one is what the rest of the step costs.
// f32 walks the packed f32 matrices (simd/matvec.h) the f32 engine decodes with.
struct WalkShape {
  const char* name;
  size_t dim, ffn, layers, vocab;
};
constexpr WalkShape kWalkShapes[] = {
    {"15M", 288, 768, 6, 32000}, {"42M", 512, 1376, 8, 32000}, {"110M", 768, 2048, 12, 32000}};

// One matrix of a walk in either storage: its bytes (for the read) and its MatVec.
class WalkMatrix {
 public:
  virtual ~WalkMatrix() = default;
  virtual const void* data() const = 0;
  virtual size_t bytes() const = 0;
  virtual size_t panels() const = 0;
  virtual void MatVec(const float* x, float* y, size_t begin, size_t end) const = 0;
  // Copies the matrix to `place` (64-byte aligned, bytes() long) and reads it there.
  virtual void MoveTo(uint8_t* place) = 0;
};

class CompressedWalkMatrix final : public WalkMatrix {
 public:
  CompressedWalkMatrix(CompressedFormat type, size_t rows, size_t cols) : w_(type, rows, cols) {}
  const void* data() const override { return w_.view.data; }
  size_t bytes() const override { return w_.bytes; }
  size_t panels() const override { return w_.view.panels(); }
  void MatVec(const float* x, float* y, size_t begin, size_t end) const override {
    simd::MatVec(w_.view, x, y, begin, end);
  }
  void MoveTo(uint8_t* place) override {
    std::memcpy(place, w_.view.data, w_.bytes);
    w_.view.data = place;
    w_.storage.reset();
  }

 private:
  CompressedWeights w_;
};

class F32WalkMatrix final : public WalkMatrix {
 public:
  F32WalkMatrix(size_t rows, size_t cols) : w_(rows, cols) {}
  const void* data() const override { return w_.view.data; }
  size_t bytes() const override { return w_.bytes(); }
  size_t panels() const override { return w_.view.panels(); }
  void MatVec(const float* x, float* y, size_t begin, size_t end) const override {
    simd::MatVec(w_.view, x, y, begin, end);
  }
  void MoveTo(uint8_t* place) override {
    std::memcpy(place, w_.view.data, w_.bytes());
    w_.view.data = reinterpret_cast<const float*>(place);
    w_.storage.reset();
  }

 private:
  PackedWeights<float> w_;
};

// The walk's matrices moved into one huge-page arena, back to back in walk order at
// 64-byte aligned offsets, as the engine packs a model's weights; nullopt (the
// matrices stay apart) where it cannot be allocated.
std::optional<Buffer<uint8_t>> GatherWalk(const std::vector<std::unique_ptr<WalkMatrix>>& walk) {
  const auto aligned = [](size_t bytes) { return (bytes + 63) / 64 * 64; };
  size_t total = 0;
  for (const auto& w : walk) total += aligned(w->bytes());
  std::optional<Buffer<uint8_t>> arena = Buffer<uint8_t>::Allocate(total, Pages::kHuge);
  if (!arena) return std::nullopt;
  size_t offset = 0;
  for (const auto& w : walk) {
    w->MoveTo(arena->data() + offset);
    offset += aligned(w->bytes());
  }
  return arena;
}

// `compressed` empty: f32.
void RegisterModelWalk(std::optional<CompressedFormat> compressed, const WalkShape& shape,
                       threading::ThreadPool& pool) {
  const std::string type_name = compressed ? simd::CompressedFormatName(*compressed) : "f32";
  const std::string name = "MatVecModelWalk/" + type_name + "/" + shape.name +
                           "/threads:" + std::to_string(pool.threads());
  Timed(benchmark::RegisterBenchmark(name.c_str(), [=, &pool](State& state) {
    std::vector<std::unique_ptr<WalkMatrix>> walk;
    const auto add = [&](size_t k, size_t n) {
      if (compressed) {
        walk.push_back(std::make_unique<CompressedWalkMatrix>(*compressed, k, n));
      } else {
        walk.push_back(std::make_unique<F32WalkMatrix>(k, n));
      }
    };
    const size_t d = shape.dim, f = shape.ffn;
    for (size_t layer = 0; layer < shape.layers; ++layer) {
      // q, k, v, o, gate, up, down
      for (auto [k, n] : {std::pair<size_t, size_t>{d, d}, {d, d}, {d, d}, {d, d}, {d, f}, {d, f},
                          {f, d}}) {
        add(k, n);
      }
    }
    add(d, shape.vocab);
    const std::optional<Buffer<uint8_t>> arena = GatherWalk(walk);
    if (!arena) {
      state.SkipWithError("no memory for the walk's arena");
      return;
    }
    const auto x = RandomRow<float>(std::max(d, f), -1, 1);
    auto y = RandomRow<float>(shape.vocab, 0, 1);
    double total = 0;
    for (const auto& w : walk) total += static_cast<double>(w->bytes());
    auto matvec = [&] {
      for (const auto& w : walk) {
        ForEachPanelRange(pool, w->panels(), [&](size_t begin, size_t end) {
          w->MatVec(x.get(), y.get(), begin, end);
        });
      }
      benchmark::ClobberMemory();
    };
    uint32_t checksum = 0;
    auto read = [&] {
      for (const auto& w : walk) {
        const size_t tasks = PanelTasks(w->panels());
        checksum += machine::ParallelChunkedRead(pool, w->data(), w->bytes(), tasks);
      }
    };
    matvec();
    read();
    double matvec_seconds = 0, read_seconds = 0;
    Alternation alternate;
    for (auto _ : state) {
      alternate([&] { matvec_seconds += SecondsOf(matvec); },
                [&] { read_seconds += SecondsOf(read); });
    }
    benchmark::DoNotOptimize(checksum);
    const double iterations = static_cast<double>(state.iterations());
    state.counters["read_bw_fraction"] = read_seconds / matvec_seconds;
    state.counters["read_bw_bytes/s"] = total * iterations / read_seconds;
    state.counters["matvec_bytes/s"] = total * iterations / matvec_seconds;
    state.counters["weight_bytes"] = total;
    const double sized = machine::MeasureSizedReadBytesPerSecond(pool, static_cast<size_t>(total));
    state.counters["sized_probe_bytes/s"] = sized;
    state.counters["fraction_of_sized_probe"] = total * iterations / matvec_seconds / sized;
  }));
}

// Single thread, cached weights: the fast kernel against its scalar twin.
void RegisterFastAndTwin(CompressedFormat type, size_t rows, size_t cols,
                         const std::shared_ptr<WeightCache>& cache) {
  using Fn = void (*)(const simd::CompressedMatrixView&, const float*, float*, size_t, size_t);
  const Fn fast = [](const simd::CompressedMatrixView& w, const float* x, float* y, size_t b,
                     size_t e) { simd::MatVec(w, x, y, b, e); };
  const Fn twin = [](const simd::CompressedMatrixView& w, const float* x, float* y, size_t b,
                     size_t e) { simd::MatVecScalar(w, x, y, b, e); };
  for (auto [implementation, matvec] : {std::pair{"fast", fast}, std::pair{"twin", twin}}) {
    const std::string name = std::string("MatVec/") + simd::CompressedFormatName(type) + "/" +
                             implementation + "/weights:cached/" + Shape(rows, cols);
    Timed(benchmark::RegisterBenchmark(name.c_str(), [=, matvec = matvec](State& state) {
      const CompressedWeights& w = cache->Get(type, rows, cols);
      const auto x = RandomRow<float>(rows, -1, 1);
      auto y = RandomRow<float>(cols, 0, 1);
      for (auto _ : state) {
        matvec(w.view, x.get(), y.get(), 0, w.view.panels());
        benchmark::ClobberMemory();
      }
      SetThroughput(state, static_cast<double>(rows * cols), static_cast<double>(w.bytes));
    }));
  }
}

// The bf16-activation kernel against its scalar twin, one row (the decode shape).
void RegisterBf16ActivationsFastAndTwin(size_t rows, size_t cols, const std::shared_ptr<WeightCache>& cache) {
  using Fn = void (*)(const simd::Bf16Rows&, size_t, size_t, const simd::CompressedMatrixView&, float*, size_t,
                      size_t, size_t);
  for (auto [implementation, matmul] : {std::pair<const char*, Fn>{"fast", simd::MatMulBf16},
                                        std::pair<const char*, Fn>{"twin", simd::MatMulBf16Scalar}}) {
    const std::string name = std::string("MatVec/bf16/activations:bf16/") + implementation + "/weights:cached/" +
                             Shape(rows, cols);
    Timed(benchmark::RegisterBenchmark(name.c_str(), [=, matmul = matmul](State& state) {
      const CompressedWeights& w = cache->Get(CompressedFormat::kBf16, rows, cols);
      const auto x = RandomRow<float>(rows, -1, 1);
      auto y = RandomRow<float>(cols, 0, 1);
      Bf16ActivationRows rounded(1, rows);
      rounded.From(x.get(), 1);
      for (auto _ : state) {
        matmul(rounded.rows, 0, 1, w.pairs, y.get(), cols, 0, w.pairs.panels());
        benchmark::ClobberMemory();
      }
      SetThroughput(state, static_cast<double>(rows * cols), static_cast<double>(w.bytes));
    }));
  }
}

// Prefill: the f32 FMA peak of these threads is measured right before the loop, as for
// the f32 MatMul rows (matmul_bench.cc); with int8 activations the int8 dot peak too
// (int8_peak_fraction: 2 operations per weight and row, as FLOPs count an FMA).
void RegisterMatMul(CompressedFormat type, size_t m, size_t rows, size_t cols,
                    threading::ThreadPool& pool, const std::shared_ptr<WeightCache>& cache,
                    Activations activations = Activations::kF32) {
  const std::string name = "MatMul/" + TypeAndActivations(type, activations) + "/fast/M:" +
                           std::to_string(m) + "/" + Shape(rows, cols) +
                           "/threads:" + std::to_string(pool.threads());
  Timed(benchmark::RegisterBenchmark(name.c_str(), [=, &pool](State& state) {
    const CompressedWeights& w = cache->Get(type, rows, cols);
    const auto a = RandomRow<float>(m * rows, -1, 1);
    auto c = RandomRow<float>(m * cols, 0, 1);
    QuantizedRows quantized(m, rows);
    Bf16ActivationRows rounded(m, rows);
    const double peak = machine::MeasureFmaFlopsPerSecond(pool);
    // Int8 activations are judged against the int8 dot peak as well (its unit).
    const double int8_peak = activations == Activations::kInt8 ? machine::MeasureInt8DotOpsPerSecond(pool) : 0;
    // And bf16 activations against the bf16 dot peak (VDPBF16PS's unit where it runs).
    const double bf16_peak = activations == Activations::kBf16 ? machine::MeasureBf16DotFlopsPerSecond(pool) : 0;
    const LoopClock clock;
    for (auto _ : state) {
      if (activations == Activations::kInt8) {
        quantized.From(a.get(), m);
        ForEachPanelRange(pool, w.view.panels(), [&](size_t begin, size_t end) {
          simd::MatMulInt8(quantized.rows, 0, m, w.quads, c.get(), cols, begin, end);
        });
      } else if (activations == Activations::kBf16) {
        rounded.From(a.get(), m);
        ForEachPanelRange(pool, w.view.panels(), [&](size_t begin, size_t end) {
          simd::MatMulBf16(rounded.rows, 0, m, w.pairs, c.get(), cols, begin, end);
        });
      } else {
        ForEachPanelRange(pool, w.view.panels(), [&](size_t begin, size_t end) {
          simd::MatMul(a.get(), rows, m, w.view, c.get(), cols, begin, end);
        });
      }
      benchmark::ClobberMemory();
    }
    const double flops = 2.0 * static_cast<double>(m * rows * cols);
    SetThroughput(state, static_cast<double>(m * rows * cols),
                  static_cast<double>((m * rows + m * cols) * sizeof(float) + w.bytes));
    state.counters["FLOP/s"] = benchmark::Counter(flops * static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate);
    state.counters["fma_peak_fraction"] = clock.FractionOfLimit(state, flops, peak);
    state.counters["peak_FLOP/s"] = peak;
    if (int8_peak > 0) {
      state.counters["int8_peak_fraction"] = clock.FractionOfLimit(state, flops, int8_peak);
      state.counters["int8_peak_OP/s"] = int8_peak;
    }
    if (bf16_peak > 0) {
      state.counters["bf16_peak_fraction"] = clock.FractionOfLimit(state, flops, bf16_peak);
      state.counters["bf16_peak_FLOP/s"] = bf16_peak;
    }
  }));
}

// The compressed MatMul against the f32 MatMul of the same shape, one of each per
// iteration in alternating order (alternating_timing.h): speed_over_f32 is the f32
// time over the compressed time, the ratio CI gates, which two separate rows
// seconds apart put at 0.73–1.13 within minutes on a shared VM.
void RegisterMatMulAgainstF32(CompressedFormat type, size_t m, size_t rows, size_t cols,
                              threading::ThreadPool& pool, const std::shared_ptr<WeightCache>& cache) {
  const std::string name = "MatMulVsF32/" + std::string(simd::CompressedFormatName(type)) + "/M:" +
                           std::to_string(m) + "/" + Shape(rows, cols) +
                           "/threads:" + std::to_string(pool.threads());
  Timed(benchmark::RegisterBenchmark(name.c_str(), [=, &pool](State& state) {
    const CompressedWeights& w = cache->Get(type, rows, cols);
    const PackedWeights<float> f32(rows, cols);
    const auto a = RandomRow<float>(m * rows, -1, 1);
    auto c = RandomRow<float>(m * cols, 0, 1);
    const auto compressed_matmul = [&] {
      ForEachPanelRange(pool, w.view.panels(), [&](size_t begin, size_t end) {
        simd::MatMul(a.get(), rows, m, w.view, c.get(), cols, begin, end);
      });
      benchmark::ClobberMemory();
    };
    const auto f32_matmul = [&] {
      ForEachPanelRange(pool, f32.view.panels(), [&](size_t begin, size_t end) {
        simd::MatMul(a.get(), rows, m, f32.view, c.get(), cols, begin, end);
      });
      benchmark::ClobberMemory();
    };
    double compressed_seconds = 0, f32_seconds = 0;
    Alternation alternate;
    for (auto _ : state) {
      alternate([&] { compressed_seconds += SecondsOf(compressed_matmul); },
                [&] { f32_seconds += SecondsOf(f32_matmul); });
    }
    state.counters["speed_over_f32"] = f32_seconds / compressed_seconds;
  }));
}

}  // namespace

void RegisterCompressedBenchmarks(threading::ThreadPool& one_thread,
                                  threading::ThreadPool& two_threads) {
  auto cache = std::make_shared<WeightCache>();
  for (CompressedFormat type : kTypes) {
    for (size_t cols : {2048, 32000, 54000}) {
      RegisterRoofline(type, 768, cols, one_thread, cache);
      RegisterRoofline(type, 768, cols, two_threads, cache);
    }
  }
  for (CompressedFormat type : kTypes) {
    RegisterMatMul(type, 512, 768, 768, one_thread, cache);
    RegisterMatMul(type, 512, 768, 768, two_threads, cache);
    RegisterMatMulAgainstF32(type, 512, 768, 768, one_thread, cache);
  }
  for (CompressedFormat type : kTypes) {
    if (!simd::HasInt8Quads(type)) continue;
    for (size_t cols : {2048, 32000, 54000}) {
      RegisterRoofline(type, 768, cols, one_thread, cache, Activations::kInt8);
      RegisterRoofline(type, 768, cols, two_threads, cache, Activations::kInt8);
    }
    RegisterMatMul(type, 512, 768, 768, one_thread, cache, Activations::kInt8);
    RegisterMatMul(type, 512, 768, 768, two_threads, cache, Activations::kInt8);
  }
  // bf16 weights with bf16 activations (VDPBF16PS where the CPU has AVX512_BF16).
  for (size_t cols : {2048, 32000, 54000}) {
    RegisterRoofline(CompressedFormat::kBf16, 768, cols, one_thread, cache, Activations::kBf16);
    RegisterRoofline(CompressedFormat::kBf16, 768, cols, two_threads, cache, Activations::kBf16);
  }
  RegisterMatMul(CompressedFormat::kBf16, 512, 768, 768, one_thread, cache, Activations::kBf16);
  RegisterMatMul(CompressedFormat::kBf16, 512, 768, 768, two_threads, cache, Activations::kBf16);
  RegisterBf16ActivationsFastAndTwin(768, 2048, cache);
  for (CompressedFormat type : kTypes) RegisterFastAndTwin(type, 768, 2048, cache);
  for (const WalkShape& shape : kWalkShapes) {
    RegisterModelWalk(std::nullopt, shape, one_thread);  // f32
    RegisterModelWalk(std::nullopt, shape, two_threads);
  }
  for (CompressedFormat type : kTypes) {
    for (const WalkShape& shape : kWalkShapes) {
      if (std::string(shape.name) == "15M") continue;  // the f32 engine's small-model case
      // A model whose widths a K-quant does not divide keeps other types for those
      // matrices (the engine's fallbacks): not this walk's question.
      if (!simd::FitsCompressedFormat(type, shape.dim) || !simd::FitsCompressedFormat(type, shape.ffn)) continue;
      RegisterModelWalk(type, shape, one_thread);
      RegisterModelWalk(type, shape, two_threads);
    }
  }
}

}  // namespace kvrt::bench
