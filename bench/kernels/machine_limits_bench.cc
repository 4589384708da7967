// Rows that show the machine limits themselves, measured like every other row.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "kernel_bench_support.h"
#include "kernel_benchmarks.h"
#include "kvrt/machine/machine_limits.h"

namespace kvrt::bench {
namespace {

using benchmark::State;

// A register-only probe's rate on `pool`: `run(pool, rounds, &sink)` per iteration,
// its operations as the `counter` rate.
template <typename Sink, class Run>
void RegisterPeak(threading::ThreadPool& pool, const std::string& name, const char* counter, Run run) {
  Timed(benchmark::RegisterBenchmark(name.c_str(), [&pool, counter, run](State& state) {
    Sink sink = 0;
    size_t ops = 0;
    for (auto _ : state) ops += run(pool, 1'600'000, &sink);
    benchmark::DoNotOptimize(sink);
    state.counters[counter] = benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsRate);
  }));
}

void RegisterFmaPeak(threading::ThreadPool& pool) {
  RegisterPeak<float>(pool, "MachineLimits/FmaPeak/f32/threads:" + std::to_string(pool.threads()), "FLOP/s",
                      machine::ParallelFmaProbe);
}

void RegisterInt8DotPeak(threading::ThreadPool& pool) {
  RegisterPeak<uint32_t>(pool, "MachineLimits/Int8DotPeak/threads:" + std::to_string(pool.threads()), "OP/s",
                         machine::ParallelInt8DotProbe);
}

void RegisterBf16DotPeak(threading::ThreadPool& pool) {
  RegisterPeak<float>(pool, "MachineLimits/Bf16DotPeak/threads:" + std::to_string(pool.threads()), "FLOP/s",
                      machine::ParallelBf16DotProbe);
}

// A buffer of machine::BandwidthProbeBytes() shared by the bandwidth rows, filled on first use.
class ProbeBuffer {
 public:
  const void* data() {
    if (words_ == nullptr) {
      words_ = hwy::AllocateAligned<uint32_t>(bytes() / sizeof(uint32_t));
      std::fill(words_.get(), words_.get() + bytes() / sizeof(uint32_t), 1u);  // page in
    }
    return words_.get();
  }
  size_t bytes() const { return machine::BandwidthProbeBytes(); }

 private:
  hwy::AlignedFreeUniquePtr<uint32_t[]> words_;
};

void RegisterReadBandwidth(threading::ThreadPool& pool, std::shared_ptr<ProbeBuffer> buffer) {
  const std::string name = "MachineLimits/ReadBandwidth/threads:" + std::to_string(pool.threads());
  Timed(benchmark::RegisterBenchmark(name.c_str(), [&pool, buffer](State& state) {
    const void* data = buffer->data();
    for (auto _ : state) benchmark::DoNotOptimize(machine::ParallelStreamRead(pool, data, buffer->bytes()));
    state.SetBytesProcessed(static_cast<int64_t>(buffer->bytes()) * state.iterations());
  }));
}

// The pool's own cost in a decode step of the 15M shape: its 31 parallel loops with
// their task counts (per block Q|K|V 27, attention 6, output 9, gate|up 48, down 9;
// the head 125), each task a single add. The row's time is one step's loops;
// ns_per_loop is what one fork and join costs with that many claims.
void RegisterPoolStep(threading::ThreadPool& pool) {
  const std::string name = "MachineLimits/PoolStep15M/threads:" + std::to_string(pool.threads());
  Timed(benchmark::RegisterBenchmark(name.c_str(), [&pool](State& state) {
    std::vector<size_t> loops;
    for (int block = 0; block < 6; ++block) loops.insert(loops.end(), {27, 6, 9, 48, 9});
    loops.push_back(125);
    std::vector<double> out(125 * 8, 0.0);  // a cache line per task: no false sharing
    for (auto _ : state) {
      for (size_t tasks : loops) pool.ParallelFor(tasks, [&](size_t i, size_t) { out[i * 8] += 1.0; });
    }
    benchmark::DoNotOptimize(out.data());
    state.counters["ns_per_loop"] = benchmark::Counter(
        static_cast<double>(loops.size()) * static_cast<double>(state.iterations()),
        benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["loops_per_step"] = static_cast<double>(loops.size());
  }));
}

}  // namespace

void RegisterMachineLimitBenchmarks(threading::ThreadPool& one_thread,
                                    threading::ThreadPool& two_threads) {
  RegisterFmaPeak(one_thread);
  RegisterFmaPeak(two_threads);
  RegisterInt8DotPeak(one_thread);
  RegisterInt8DotPeak(two_threads);
  RegisterBf16DotPeak(one_thread);
  RegisterBf16DotPeak(two_threads);
  auto buffer = std::make_shared<ProbeBuffer>();
  RegisterReadBandwidth(one_thread, buffer);
  RegisterReadBandwidth(two_threads, buffer);
  RegisterPoolStep(two_threads);
}

}  // namespace kvrt::bench
