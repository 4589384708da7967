// Row kernels at the widths the models use: fast (dispatched Highway) vs twin. Each
// row calls the kernel directly, as the engine will, so fixed costs (dispatch, call)
// are part of the measurement on both sides.
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>

#include "alternating_timing.h"
#include "kernel_bench_support.h"
#include "kernel_benchmarks.h"
#include "kvrt/simd/dot.h"
#include "kvrt/simd/rms_norm.h"
#include "kvrt/simd/rope.h"
#include "kvrt/simd/scaled_accumulate.h"
#include "kvrt/simd/silu_mul.h"
#include "kvrt/simd/softmax.h"

namespace kvrt::bench {
namespace {

using benchmark::State;

template <class T, bool kFast>
void DotRow(State& state, size_t n) {
  const auto a = RandomRow<T>(n, -1, 1, 1), b = RandomRow<T>(n, -1, 1, 2);
  for (auto _ : state) {
    benchmark::DoNotOptimize(kFast ? simd::Dot(a.get(), b.get(), n)
                                   : simd::DotScalar(a.get(), b.get(), n));
  }
  SetThroughput(state, n, 2.0 * n * sizeof(T));
}

template <class T, bool kFast>
void SoftmaxRow(State& state, size_t n) {
  const auto in = RandomRow<T>(n, -8, 8);
  auto out = RandomRow<T>(n, 0, 1);
  for (auto _ : state) {
    if (kFast) {
      simd::Softmax(in.get(), out.get(), n);
    } else {
      simd::SoftmaxScalar(in.get(), out.get(), n);
    }
    benchmark::ClobberMemory();
  }
  SetThroughput(state, n, 2.0 * n * sizeof(T));
}

template <class T, bool kFast>
void ScaledAccumulateRow(State& state, size_t n) {
  const auto x = RandomRow<T>(n, -1, 1);
  auto y = RandomRow<T>(n, -1, 1);
  const T w = T(1e-7);  // keeps y bounded over millions of iterations
  for (auto _ : state) {
    if (kFast) {
      simd::ScaledAccumulate(w, x.get(), y.get(), n);
    } else {
      simd::ScaledAccumulateScalar(w, x.get(), y.get(), n);
    }
    benchmark::ClobberMemory();
  }
  SetThroughput(state, n, 3.0 * n * sizeof(T));
}

template <class T, bool kFast>
void RmsNormRow(State& state, size_t n) {
  const auto x = RandomRow<T>(n, -2, 2), gain = RandomRow<T>(n, 0.5, 1.5);
  auto y = RandomRow<T>(n, 0, 1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(kFast ? simd::RmsNorm(x.get(), gain.get(), T(1e-5), y.get(), n)
                                   : simd::RmsNormScalar(x.get(), gain.get(), T(1e-5), y.get(), n));
  }
  SetThroughput(state, n, 3.0 * n * sizeof(T));
}

template <class T, bool kFast>
void RopeRows(State& state, size_t head_width, size_t heads) {
  const size_t pairs = head_width / 2, n = head_width * heads;
  auto v = RandomRow<T>(n, -1, 1);
  auto cos = RandomRow<T>(pairs, 0, 1), sin = RandomRow<T>(pairs, 0, 1);
  for (size_t i = 0; i < pairs; ++i) {  // true rotations keep v bounded
    cos[i] = std::cos(static_cast<T>(i));
    sin[i] = std::sin(static_cast<T>(i));
  }
  for (auto _ : state) {
    if (kFast) {
      simd::RopeRotate(v.get(), cos.get(), sin.get(), pairs, heads);
    } else {
      simd::RopeRotateScalar(v.get(), cos.get(), sin.get(), pairs, heads);
    }
    benchmark::ClobberMemory();
  }
  SetThroughput(state, n, 2.0 * n * sizeof(T));
}

template <class T, bool kFast>
void SiluMulRow(State& state, size_t n) {
  const auto gate = RandomRow<T>(n, -6, 6), up = RandomRow<T>(n, -1, 1);
  auto out = RandomRow<T>(n, 0, 1);
  for (auto _ : state) {
    if (kFast) {
      simd::SiluMul(gate.get(), up.get(), out.get(), n);
    } else {
      simd::SiluMulScalar(gate.get(), up.get(), out.get(), n);
    }
    benchmark::ClobberMemory();
  }
  SetThroughput(state, n, 3.0 * n * sizeof(T));
}

// One row timing the fast kernel and its twin alternately, kBatch calls of each per
// iteration (the order swapped every time), for the ratios CI gates: a burst of a
// neighbour lands on both sides instead of on one of two separate rows, so
// twin_over_fast (the twin's time over the fast kernel's) holds on a shared machine.
template <class Fast, class Twin>
void Interleaved(State& state, Fast fast, Twin twin) {
  constexpr int kBatch = 256;
  auto seconds = [](auto& kernel) {
    return SecondsOf([&] {
      for (int i = 0; i < kBatch; ++i) kernel();
    });
  };
  double fast_seconds = 0, twin_seconds = 0;
  Alternation alternate;
  for (auto _ : state) {
    alternate([&] { fast_seconds += seconds(fast); }, [&] { twin_seconds += seconds(twin); });
  }
  state.counters["twin_over_fast"] = twin_seconds / fast_seconds;
}

template <class T>
void InterleavedDot(State& state, size_t n) {
  const auto a = RandomRow<T>(n, -1, 1, 1), b = RandomRow<T>(n, -1, 1, 2);
  Interleaved(state, [&] { benchmark::DoNotOptimize(simd::Dot(a.get(), b.get(), n)); },
              [&] { benchmark::DoNotOptimize(simd::DotScalar(a.get(), b.get(), n)); });
}

template <class T>
void InterleavedSoftmax(State& state, size_t n) {
  const auto in = RandomRow<T>(n, -8, 8);
  auto out = RandomRow<T>(n, 0, 1);
  Interleaved(state, [&] { simd::Softmax(in.get(), out.get(), n); benchmark::ClobberMemory(); },
              [&] { simd::SoftmaxScalar(in.get(), out.get(), n); benchmark::ClobberMemory(); });
}

template <class T>
void InterleavedScaledAccumulate(State& state, size_t n) {
  const auto x = RandomRow<T>(n, -1, 1);
  auto y = RandomRow<T>(n, -1, 1);
  const T w = T(1e-7);  // keeps y bounded
  Interleaved(state, [&] { simd::ScaledAccumulate(w, x.get(), y.get(), n); benchmark::ClobberMemory(); },
              [&] { simd::ScaledAccumulateScalar(w, x.get(), y.get(), n); benchmark::ClobberMemory(); });
}

// Registers the fast row and its twin row for one shape.
template <class Fast, class Twin, class... Args>
void RegisterPair(const char* kernel, const char* type, const std::string& shape, Fast fast,
                  Twin twin, Args... args) {
  const std::string prefix = std::string(kernel) + "/" + type;
  Timed(benchmark::RegisterBenchmark((prefix + "/fast/" + shape).c_str(), fast, args...));
  Timed(benchmark::RegisterBenchmark((prefix + "/twin/" + shape).c_str(), twin, args...));
}

std::string Size(size_t n) { return "n:" + std::to_string(n); }

template <class T>
void RegisterAllForType() {
  const char* type = TypeName<T>();
  for (size_t n : {64, 128, 256, 768, 2048}) {
    RegisterPair("Dot", type, Size(n), DotRow<T, true>, DotRow<T, false>, n);
  }
  for (size_t n : {256, 2048, 32000}) {
    RegisterPair("Softmax", type, Size(n), SoftmaxRow<T, true>, SoftmaxRow<T, false>, n);
  }
  for (size_t n : {64, 128, 256, 768, 2048}) {
    RegisterPair("ScaledAccumulate", type, Size(n), ScaledAccumulateRow<T, true>,
                 ScaledAccumulateRow<T, false>, n);
  }
  for (size_t n : {288, 512, 768, 2048}) {
    RegisterPair("RmsNorm", type, Size(n), RmsNormRow<T, true>, RmsNormRow<T, false>, n);
  }
  for (auto [head_width, heads] : {std::pair<size_t, size_t>{64, 12}, {128, 16}}) {
    RegisterPair("RopeRotate", type,
                 "head_width:" + std::to_string(head_width) + "/heads:" + std::to_string(heads),
                 RopeRows<T, true>, RopeRows<T, false>, head_width, heads);
  }
  for (size_t n : {288, 768, 2048, 8192}) {
    RegisterPair("SiluMul", type, Size(n), SiluMulRow<T, true>, SiluMulRow<T, false>, n);
  }
}

}  // namespace

void RegisterVectorKernelBenchmarks() {
  RegisterAllForType<float>();
  RegisterAllForType<double>();
  // The perf gate's fast/twin ratios, each pair interleaved in one row.
  Timed(benchmark::RegisterBenchmark("Interleaved/Dot/f32/n:256", InterleavedDot<float>, 256));
  Timed(benchmark::RegisterBenchmark("Interleaved/Softmax/f32/n:256", InterleavedSoftmax<float>, 256));
  Timed(benchmark::RegisterBenchmark("Interleaved/ScaledAccumulate/f32/n:256",
                                     InterleavedScaledAccumulate<float>, 256));
}

}  // namespace kvrt::bench
