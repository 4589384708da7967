// The two hardware limits kvrt's benchmarks are judged against (the Google Benchmark
// binaries under bench/ and `kvrt bench`), measured by the running process on this
// machine; one implementation for both, so their roofline fractions agree:
//  - f32 FMA peak: a register-only probe (16 independent FMA chains, no memory
//    traffic) on the best Highway target, in FLOP/s (one FMA = 2 FLOPs);
//  - memory read bandwidth: streaming a buffer far larger than the last-level cache,
//    in bytes/s, or one of a given size (a model's weights, which may fit in it).
// The machine is shared, and its speed drifts by tens of percent over seconds as
// neighbours come and go. So the rows that report a fraction of a limit measure that
// limit themselves, with the same threads, right before their timed loop
// (Measure* below); the MachineLimits/* rows show the limits on their own.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kvrt/threading/thread_pool.h"

namespace kvrt::machine {

// One run of the register-only probe: `iterations` rounds of 16 independent vector
// FMAs. Returns the FLOPs executed; `sink` keeps the result alive.
size_t RunFmaProbe(size_t iterations, float* sink);

// The probe on every thread of `pool`: 16 tasks of iterations/16 rounds each, so the
// pool balances them. Returns the FLOPs executed.
size_t ParallelFmaProbe(threading::ThreadPool& pool, size_t iterations, float* sink);
// The same arithmetic on `threads` plain std::threads, outside kvrt's pool: the
// reference a thread-scaling gate divides by must not share the code it judges
// (a pool that stopped running in parallel would slow both sides alike).
size_t ThreadedFmaProbe(size_t threads, size_t iterations, float* sink);

// Reads `bytes` (a multiple of 4) from `data` with `pool`, as 16 MiB tasks each read
// as four sequential streams, the access pattern of MatVec streaming four panels at
// once. Integer lanes, so any bit pattern reads at full speed. Returns a checksum.
uint32_t ParallelStreamRead(threading::ThreadPool& pool, const void* data, size_t bytes);

// Reads `bytes` (a multiple of 4) from `data` with `pool` as `tasks` equal parts (each a
// multiple of 64 bytes but the last), each read as four sequential streams. Unlike
// ParallelStreamRead, it splits a buffer of any size over the threads, so it measures the
// bandwidth at which the pool reads a cache-resident buffer (a weight matrix itself, say)
// as a panel-range split of a MatVec does. Returns a checksum.
uint32_t ParallelChunkedRead(threading::ThreadPool& pool, const void* data, size_t bytes,
                             size_t tasks);

// Size of the last-level cache as the OS reports it (260 MiB on the target VM).
size_t LastLevelCacheBytes();

// Buffer size of the standalone bandwidth row: at least 1 GiB and 4× the LLC.
size_t BandwidthProbeBytes();

// f32 FLOP/s of `pool` right now: the best of three ~5 ms probe runs.
double MeasureFmaFlopsPerSecond(threading::ThreadPool& pool);

// One run of the int8 dot probe on the calling thread, on the best target:
// `iterations` rounds of 16 independent chains of the dot instruction the
// int8-activation kernels use here (below). Returns the operations executed, 2 per
// byte product; every byte is 1, so `sink` (the sum of the chains' lanes, modulo
// 2^32) is known in advance.
size_t RunInt8DotProbe(size_t iterations, uint32_t* sink);

// The int8 dot probe on every thread of `pool`: 16 tasks of iterations/16 rounds of 16
// independent chains of the dot instruction the int8-activation kernels use here
// (VPDPBUSD with AVX-512 VNNI, VPMADDUBSW on AVX2, the portable form elsewhere).
// Returns the operations executed, 2 per byte product.
size_t ParallelInt8DotProbe(threading::ThreadPool& pool, size_t iterations, uint32_t* sink);

// Int8 dot operations/s of `pool` right now (2 per byte product): the peak the
// prefill of int8 activations is judged against, as the FMA peak is for f32. The
// best of three probe runs.
double MeasureInt8DotOpsPerSecond(threading::ThreadPool& pool);

// One run of the bf16 dot probe on the calling thread, on the unit the bf16-activation
// kernel (simd::MatMulBf16) uses here: the AMX tiles where it picks them
// (simd::RunAmxBf16DotProbe, iterations / 8 rounds), else `iterations` rounds of 16
// independent chains of the pair dot (VDPBF16PS with AVX512_BF16, two FMAs per lane
// elsewhere). Returns the FLOPs executed, 2 per product.
size_t RunBf16DotProbe(size_t iterations, float* sink);

// The unit RunBf16DotProbe measures and the bf16-activation kernel runs on here:
// "amx", "vdpbf16ps" or "fma".
const char* Bf16DotUnit();

// The bf16 dot probe on every thread of `pool`, as ParallelInt8DotProbe.
size_t ParallelBf16DotProbe(threading::ThreadPool& pool, size_t iterations, float* sink);

// bf16 dot FLOPs/s of `pool` right now: the peak the prefill of bf16 activations is
// judged against. The best of three probe runs.
double MeasureBf16DotFlopsPerSecond(threading::ThreadPool& pool);

// Read bytes/s of `pool` right now over `data` (which must be far larger than the
// LLC and already paged in): the best of two passes.
double MeasureReadBytesPerSecond(threading::ThreadPool& pool, const void* data, size_t bytes);

// Read bytes/s of `pool` right now over a buffer of `bytes` bytes of its own
// (allocated and paged in by this call, freed before it returns): one warm-up pass,
// then the best of five. Sized like a model's weights in some format, it is the
// bandwidth a decode of that model can reach, served from the LLC when they fit
// there, from DRAM when not. Work is cut into about 32 tasks so that two threads
// share even a small buffer. 0 when the buffer cannot be allocated.
double MeasureSizedReadBytesPerSecond(threading::ThreadPool& pool, size_t bytes);

// Seconds one ParallelFor of `tasks` empty tasks costs `pool` right now: the fork,
// the claims and the join with nothing to compute, which every parallel region of a
// decode step pays on top of its work. The best of three runs of 2000 regions.
double MeasureRegionSeconds(threading::ThreadPool& pool, size_t tasks);

}  // namespace kvrt::machine
