// Probes of the FMA peak and the read bandwidth. The vector loops are Highway code
// dispatched like the kernels, so they run on the same (best) target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/machine_limits.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::machine::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// 16 chains: two FMA ports × 4-cycle latency need 8 in flight; 16 leaves margin and
// still fits the 32 AVX-512 registers with the two constants.
constexpr size_t kFmaChains = 16;

size_t FmaProbeF32(size_t iterations, float* sink) {
  const hn::ScalableTag<float> d;
  const auto multiplier = hn::Set(d, 0.999999f);  // acc → acc·m + a converges to a/(1−m)
  const auto addend = hn::Set(d, 1e-6f);         // = 1: normal numbers, no overflow
  hn::Vec<decltype(d)> acc[kFmaChains];
  for (size_t c = 0; c < kFmaChains; ++c) acc[c] = hn::Set(d, 0.001f * static_cast<float>(c));
  for (size_t i = 0; i < iterations; ++i) {
    HWY_UNROLL(16)
    for (size_t c = 0; c < kFmaChains; ++c) acc[c] = hn::MulAdd(acc[c], multiplier, addend);
  }
  auto total = hn::Zero(d);
  for (size_t c = 0; c < kFmaChains; ++c) total = hn::Add(total, acc[c]);
  *sink = hn::GetLane(hn::SumOfLanes(d, total));
  return iterations * kFmaChains * hn::Lanes(d) * 2;
}

// The bf16 pair dot the bf16-activation kernels run on this target (simd/src/
// bf16_matmul-inl.h), in kFmaChains independent chains of register operands:
// VDPBF16PS where the CPU has AVX512_BF16 (`vdpbf16ps`, AVX3 only), else two FMAs per
// lane on the pairs' halves, as the portable kernel does. The products are 1·2^-24, so
// the lanes stay normal and grow slowly. Returns the FLOPs executed, 2 per product:
// two products per 32-bit lane, chain and round in both forms.
size_t Bf16DotProbe(size_t iterations, bool vdpbf16ps, float* sink) {
  const hn::ScalableTag<float> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  hn::Vec<decltype(d)> acc[kFmaChains];
  for (size_t c = 0; c < kFmaChains; ++c) acc[c] = hn::Set(d, 0.001f * static_cast<float>(c));
  const auto ones = hn::Set(du, 0x3F803F80u);     // bf16 pairs (1, 1)
  const auto tiny = hn::Set(du, 0x33803380u);     // bf16 pairs (2^-24, 2^-24)
  bool dot_ran = false;
#if HWY_TARGET == HWY_AVX3
  if (vdpbf16ps) {
    for (size_t i = 0; i < iterations; ++i) {
      HWY_UNROLL(16)
      for (size_t c = 0; c < kFmaChains; ++c) {
        __m512 raw = acc[c].raw;
        asm("vdpbf16ps %2, %1, %0" : "+v"(raw) : "v"(ones.raw), "v"(tiny.raw));
        acc[c] = hn::Vec<decltype(d)>{raw};
      }
    }
    dot_ran = true;
  }
#else
  (void)vdpbf16ps;
#endif
  if (!dot_ran) {
    const auto high = hn::Set(du, 0xFFFF0000u);
    const auto weight_odd = hn::BitCast(d, hn::And(ones, high));
    const auto weight_even = hn::BitCast(d, hn::ShiftLeft<16>(ones));
    const auto a_odd = hn::BitCast(d, hn::And(tiny, high));
    const auto a_even = hn::BitCast(d, hn::ShiftLeft<16>(tiny));
    for (size_t i = 0; i < iterations; ++i) {
      HWY_UNROLL(16)
      for (size_t c = 0; c < kFmaChains; ++c) {
        acc[c] = hn::MulAdd(a_even, weight_even, hn::MulAdd(a_odd, weight_odd, acc[c]));
      }
    }
  }
  auto total = hn::Zero(d);
  for (size_t c = 0; c < kFmaChains; ++c) total = hn::Add(total, acc[c]);
  *sink = hn::GetLane(hn::SumOfLanes(d, total));
  return iterations * kFmaChains * hn::Lanes(d) * 4;
}

// The int8 dot the int8-activation kernels run on this target (simd/src/
// int8_matmul-inl.h), in 16 independent chains of register operands: VPDPBUSD where
// the CPU has AVX-512 VNNI (`vnni`, AVX3 only), VPMADDUBSW's byte pairs into int16 on
// AVX2, and the portable form (bytes shifted and masked out of each lane, int32
// multiplies and adds) elsewhere. Every byte is 1, so each lane grows by a few units a
// round; `sink` gets their total modulo 2^32. Returns the operations executed, 2 per
// byte product (a multiply and an add, as an FMA counts 2 FLOPs): four products per
// lane, chain and round in every form.
size_t Int8DotProbe(size_t iterations, bool vnni, uint32_t* sink) {
  const hn::ScalableTag<int32_t> d;
  const size_t lanes = hn::Lanes(d);
  constexpr size_t kChains = 16;
  hn::Vec<decltype(d)> acc[kChains];
  for (size_t c = 0; c < kChains; ++c) acc[c] = hn::Set(d, static_cast<int32_t>(c));
  const auto ones = hn::Set(d, 0x01010101);
  bool byte_form_ran = false;  // VPDPBUSD or the byte pairs; else the portable form runs
#if HWY_TARGET == HWY_AVX3
  if (vnni) {
    const __m512i bytes = ones.raw;
    for (size_t i = 0; i < iterations; ++i) {
      HWY_UNROLL(16)
      for (size_t c = 0; c < kChains; ++c) {
        __m512i raw = acc[c].raw;
        asm volatile("vpdpbusd %2, %1, %0" : "+v"(raw) : "v"(bytes), "v"(bytes));
        acc[c] = hn::Vec<decltype(d)>{raw};
      }
    }
    byte_form_ran = true;
  }
#elif HWY_TARGET == HWY_AVX2
  (void)vnni;
  {
    // 16-bit sums of byte pairs; each round adds 2 to a lane, so 16 bits hold 16k
    // rounds: the chains are widened to int32 (VPMADDWD by ones, as the kernel does
    // after a few quads) every 4096 rounds.
    const __m256i bytes = ones.raw, pair_ones = _mm256_set1_epi16(1);
    __m256i pairs[kChains];
    for (size_t i = 0; i < iterations;) {
      for (size_t c = 0; c < kChains; ++c) pairs[c] = _mm256_setzero_si256();
      const size_t end = std::min(iterations, i + 4096);
      for (; i < end; ++i) {
        HWY_UNROLL(16)
        for (size_t c = 0; c < kChains; ++c) {
          pairs[c] = _mm256_add_epi16(pairs[c], _mm256_maddubs_epi16(bytes, bytes));
          asm volatile("" : "+x"(pairs[c]));  // keeps each round's product
        }
      }
      for (size_t c = 0; c < kChains; ++c) {
        acc[c] = hn::Add(acc[c], hn::Vec<decltype(d)>{_mm256_madd_epi16(pairs[c], pair_ones)});
      }
    }
    byte_form_ran = true;
  }
#else
  (void)vnni;
#endif
  if (!byte_form_ran) {
    // Each chain its own activation, the weights' bytes shared by all (as the kernel
    // shares them between rows); the weights move every round by a step the compiler
    // cannot know is 0, so the products stay inside the loop.
    const auto byte = hn::Set(d, 0xFF);
    const auto step = hn::Set(d, static_cast<int32_t>(iterations >> 62));
    hn::Vec<decltype(d)> activation[kChains];
    for (size_t c = 0; c < kChains; ++c) activation[c] = hn::Set(d, static_cast<int32_t>(c + 1));
    auto weights = ones;
    for (size_t i = 0; i < iterations; ++i) {
      weights = hn::Add(weights, step);
      hn::Vec<decltype(d)> byte_of[4];
      for (int j = 0; j < 4; ++j) byte_of[j] = hn::And(hn::ShiftRightSame(weights, 8 * j), byte);
      HWY_UNROLL(16)
      for (size_t c = 0; c < kChains; ++c) {
        for (int j = 0; j < 4; ++j) acc[c] = hn::Add(acc[c], hn::Mul(byte_of[j], activation[c]));
      }
    }
  }
  // The chains' lanes summed as unsigned words, which wrap where a long run's total
  // would overflow int32 (each lane alone stays far below it).
  const hn::RebindToUnsigned<decltype(d)> du;
  auto total = hn::Zero(du);
  for (size_t c = 0; c < kChains; ++c) total = hn::Add(total, hn::BitCast(du, acc[c]));
  *sink = hn::GetLane(hn::SumOfLanes(du, total));
  return iterations * kChains * lanes * 4 * 2;
}

// Wrapping sum of n 32-bit words read as four interleaved sequential streams (the
// quarters of the range); two accumulators per stream keep 8 adds in flight.
uint32_t StreamSumU32(const uint32_t* data, size_t n) {
  const hn::ScalableTag<uint32_t> d;
  const size_t lanes = hn::Lanes(d);
  constexpr size_t kStreams = 4;
  const size_t quarter = n / kStreams / (2 * lanes) * (2 * lanes);
  hn::Vec<decltype(d)> acc[2 * kStreams];
  for (auto& a : acc) a = hn::Zero(d);
  for (size_t i = 0; i < quarter; i += 2 * lanes) {
    HWY_UNROLL(4)
    for (size_t s = 0; s < kStreams; ++s) {
      const uint32_t* stream = data + s * quarter + i;
      acc[2 * s] = hn::Add(acc[2 * s], hn::LoadU(d, stream));
      acc[2 * s + 1] = hn::Add(acc[2 * s + 1], hn::LoadU(d, stream + lanes));
    }
  }
  for (size_t a = 1; a < 2 * kStreams; ++a) acc[0] = hn::Add(acc[0], acc[a]);
  uint32_t sum = hn::GetLane(hn::SumOfLanes(d, acc[0]));
  for (size_t i = kStreams * quarter; i < n; ++i) sum += data[i];
  return sum;
}

}  // namespace kvrt::machine::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "kvrt/machine/machine_limits.h"
#include "kvrt/simd/amx.h"
#include "kvrt/simd/bf16_activations.h"
#include "kvrt/simd/int8_activations.h"

namespace kvrt::machine {
namespace {

template <class Fn>
double SecondsOf(Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Anonymous pages for the sized read probe, laid out as the engine's weight arena
// lays out its own (runtime/src/core/memory.cc): a 2 MiB-aligned start and
// MADV_HUGEPAGE, so that a decode's fraction of the probe compares one memory
// system with itself (TLB misses included). Not core's Buffer: this library sits
// beside the runtime, below the CLI that links only the installed API.
class ProbePages {
 public:
  explicit ProbePages(size_t bytes) {
    constexpr size_t kHugePage = size_t{1} << 21;
    mapped_bytes_ = bytes + kHugePage;
    void* mapped = ::mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) return;
    mapped_ = mapped;
    const auto address = reinterpret_cast<uintptr_t>(mapped);
    data_ = reinterpret_cast<void*>((address + kHugePage - 1) / kHugePage * kHugePage);
    ::madvise(data_, bytes, MADV_HUGEPAGE);  // a hint: refused, the probe reads 4 KiB pages
  }
  ~ProbePages() {
    if (mapped_ != nullptr) ::munmap(mapped_, mapped_bytes_);
  }
  ProbePages(const ProbePages&) = delete;
  ProbePages& operator=(const ProbePages&) = delete;
  uint32_t* data() const { return static_cast<uint32_t*>(data_); }

 private:
  void* mapped_ = nullptr;
  void* data_ = nullptr;
  size_t mapped_bytes_ = 0;
};

}  // namespace

HWY_EXPORT(FmaProbeF32);
HWY_EXPORT(Int8DotProbe);
HWY_EXPORT(Bf16DotProbe);
HWY_EXPORT(StreamSumU32);

size_t RunFmaProbe(size_t iterations, float* sink) {
  return HWY_DYNAMIC_DISPATCH(FmaProbeF32)(iterations, sink);
}

namespace {

// `run_probe(iterations / 16, &sink)` as 16 tasks on `pool`, which balances them; the
// operations they report added, their sinks added into `sink`.
template <typename Sink, class RunProbe>
size_t ParallelProbe(threading::ThreadPool& pool, size_t iterations, Sink* sink, RunProbe run_probe) {
  constexpr size_t kTasks = 16;
  std::vector<Sink> sinks(kTasks);
  std::vector<size_t> ops(kTasks);
  pool.ParallelFor(kTasks, [&](size_t task, size_t) { ops[task] = run_probe(iterations / kTasks, &sinks[task]); });
  size_t total = 0;
  for (size_t task = 0; task < kTasks; ++task) {
    total += ops[task];
    *sink += sinks[task];
  }
  return total;
}

// The best rate (operations per second) of three parallel runs of a probe, 1M rounds
// per thread each: ~3 ms for the FMA probe at the AVX-512 peak of this machine.
template <typename Sink, class RunProbe>
double BestParallelRate(threading::ThreadPool& pool, RunProbe run_probe) {
  const size_t iterations = size_t{1'000'000} * pool.threads();
  Sink sink = 0;
  double best = 0;
  for (int run = 0; run < 3; ++run) {
    size_t ops = 0;
    const double seconds = SecondsOf([&] { ops = ParallelProbe(pool, iterations, &sink, run_probe); });
    best = std::max(best, static_cast<double>(ops) / seconds);
  }
  return best;  // the probe runs behind dispatch and pool calls: it cannot be elided
}

}  // namespace

size_t ParallelFmaProbe(threading::ThreadPool& pool, size_t iterations, float* sink) {
  return ParallelProbe(pool, iterations, sink, RunFmaProbe);
}

size_t RunInt8DotProbe(size_t iterations, uint32_t* sink) {
  return HWY_DYNAMIC_DISPATCH(Int8DotProbe)(iterations, simd::Int8DotUsesVnni(), sink);
}

size_t ParallelInt8DotProbe(threading::ThreadPool& pool, size_t iterations, uint32_t* sink) {
  return ParallelProbe(pool, iterations, sink, RunInt8DotProbe);
}

size_t RunBf16DotProbe(size_t iterations, float* sink) {
  // Four tile products take about as long as 32 of the vector probe's 16 chains.
  if (simd::Bf16DotUsesAmx()) return simd::RunAmxBf16DotProbe(std::max<size_t>(1, iterations / 8), sink);
  return HWY_DYNAMIC_DISPATCH(Bf16DotProbe)(iterations, simd::Bf16DotUsesVdpbf16ps(), sink);
}

const char* Bf16DotUnit() {
  return simd::Bf16DotUsesAmx() ? "amx" : simd::Bf16DotUsesVdpbf16ps() ? "vdpbf16ps" : "fma";
}

size_t ParallelBf16DotProbe(threading::ThreadPool& pool, size_t iterations, float* sink) {
  return ParallelProbe(pool, iterations, sink, RunBf16DotProbe);
}

size_t ThreadedFmaProbe(size_t threads, size_t iterations, float* sink) {
  std::vector<float> sinks(threads);
  std::vector<size_t> flops(threads);
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (size_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] { flops[t] = RunFmaProbe(iterations / threads, &sinks[t]); });
  }
  size_t total = 0;
  for (size_t t = 0; t < threads; ++t) {
    workers[t].join();
    total += flops[t];
    *sink += sinks[t];
  }
  return total;
}

namespace {

// Sums `bytes` of `data` in tasks of `task_bytes` (a multiple of 4).
uint32_t StreamRead(threading::ThreadPool& pool, const void* data, size_t bytes, size_t task_bytes) {
  const size_t task_words = task_bytes / sizeof(uint32_t);
  const auto* words = static_cast<const uint32_t*>(data);
  const size_t total_words = bytes / sizeof(uint32_t);
  const size_t tasks = (total_words + task_words - 1) / task_words;
  std::vector<uint32_t> sums(tasks);
  pool.ParallelFor(tasks, [&](size_t task, size_t) {
    const size_t begin = task * task_words;
    sums[task] = HWY_DYNAMIC_DISPATCH(StreamSumU32)(words + begin,
                                                    std::min(task_words, total_words - begin));
  });
  uint32_t checksum = 0;
  for (uint32_t s : sums) checksum += s;
  return checksum;
}

}  // namespace

uint32_t ParallelStreamRead(threading::ThreadPool& pool, const void* data, size_t bytes) {
  return StreamRead(pool, data, bytes, size_t{16} << 20);
}

uint32_t ParallelChunkedRead(threading::ThreadPool& pool, const void* data, size_t bytes,
                             size_t tasks) {
  constexpr size_t kLine = 64;  // whole cache lines per task
  const size_t per_task = (bytes / std::max<size_t>(1, tasks) + kLine - 1) / kLine * kLine;
  return StreamRead(pool, data, bytes, std::max(per_task, kLine));
}

size_t LastLevelCacheBytes() {
  const long reported = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return reported > 0 ? static_cast<size_t>(reported) : size_t{260} << 20;
}

size_t BandwidthProbeBytes() { return std::max(size_t{1} << 30, 4 * LastLevelCacheBytes()); }

namespace {

// Where the sized-read and region probes leave a result, so that their work cannot
// be elided.
volatile uint32_t probe_sink = 0;

}  // namespace

double MeasureFmaFlopsPerSecond(threading::ThreadPool& pool) {
  return BestParallelRate<float>(pool, RunFmaProbe);
}

double MeasureInt8DotOpsPerSecond(threading::ThreadPool& pool) {
  return BestParallelRate<uint32_t>(pool, RunInt8DotProbe);
}

double MeasureBf16DotFlopsPerSecond(threading::ThreadPool& pool) {
  return BestParallelRate<float>(pool, RunBf16DotProbe);
}

double MeasureReadBytesPerSecond(threading::ThreadPool& pool, const void* data, size_t bytes) {
  double best = 0;
  for (int pass = 0; pass < 2; ++pass) {
    const double seconds = SecondsOf([&] { ParallelStreamRead(pool, data, bytes); });
    best = std::max(best, static_cast<double>(bytes) / seconds);
  }
  return best;
}

double MeasureSizedReadBytesPerSecond(threading::ThreadPool& pool, size_t bytes) {
  const size_t words = bytes / sizeof(uint32_t);
  if (words == 0) return 0;
  if (words > SIZE_MAX / sizeof(uint32_t) - (size_t{1} << 22)) return 0;
  const ProbePages buffer(words * sizeof(uint32_t));
  if (buffer.data() == nullptr) return 0;
  std::memset(buffer.data(), 1, words * sizeof(uint32_t));  // pages it in
  const size_t read = words * sizeof(uint32_t);
  // About 32 tasks, each a whole number of 4 KiB pages (at least one): balanced on
  // a few threads, long enough that the pool's per-task cost does not show.
  constexpr size_t kPage = 4096;
  const size_t task_bytes = std::clamp<size_t>((read / 32 + kPage - 1) / kPage * kPage, kPage, size_t{16} << 20);
  uint32_t checksum = StreamRead(pool, buffer.data(), read, task_bytes);  // warm-up: caches, TLB
  double best = 0;
  for (int pass = 0; pass < 5; ++pass) {
    uint32_t sum = 0;
    const double seconds = SecondsOf([&] { sum = StreamRead(pool, buffer.data(), read, task_bytes); });
    checksum ^= sum;
    best = std::max(best, static_cast<double>(read) / seconds);
  }
  probe_sink = checksum;
  return best;
}

double MeasureRegionSeconds(threading::ThreadPool& pool, size_t tasks) {
  constexpr int kRegions = 2000;
  std::vector<uint32_t> touched(std::max<size_t>(1, tasks));
  double best = 0;
  for (int run = 0; run < 3; ++run) {
    const double seconds = SecondsOf([&] {
      for (int r = 0; r < kRegions; ++r) {
        pool.ParallelFor(tasks, [&](size_t task, size_t) { touched[task] += 1; });
      }
    });
    best = run == 0 ? seconds : std::min(best, seconds);
  }
  probe_sink = touched[0];
  return best / kRegions;
}

}  // namespace kvrt::machine
#endif  // HWY_ONCE
