// Registration of the kernel benchmark rows (bench_kernels), one function per family.
#pragma once

#include "kvrt/threading/thread_pool.h"

namespace kvrt::bench {

// MachineLimits/FmaPeak (FLOP/s) and MachineLimits/ReadBandwidth (bytes/s) rows for
// 1 and 2 threads, and MachineLimits/PoolStep15M (the pool's fork-join cost in one
// 15M decode step) for 2.
void RegisterMachineLimitBenchmarks(threading::ThreadPool& one_thread,
                                    threading::ThreadPool& two_threads);

// Dot, Softmax, ScaledAccumulate, RmsNorm, RopeRotate, SiluMul: fast and twin.
void RegisterVectorKernelBenchmarks();

// AttentionScores and MixValues at head widths 64/128 and contexts up to 2048.
void RegisterAttentionBenchmarks();

// DecodeAttention: one query over 64 cache lanes of 1k/4k positions per KV element
// type, from memory (read_bw_fraction), fast vs twin.
void RegisterDecodeAttentionBenchmarks(threading::ThreadPool& one_thread);

// PackMatrix, and MatVec with weights cached and not in cache (1 and 2 threads); the
// not-in-cache rows report read_bw_fraction against the read bandwidth measured
// right before their timed loop (kvrt/machine/machine_limits.h).
void RegisterMatVecBenchmarks(threading::ThreadPool& one_thread,
                              threading::ThreadPool& two_threads);

// MatMul for prefill (1 and 2 threads) with fma_peak_fraction against the FMA peak
// measured right before the timed loop with the same threads, and the twin.
void RegisterMatMulBenchmarks(threading::ThreadPool& one_thread,
                              threading::ThreadPool& two_threads);

// MatMul 2-thread speed-up over 1 thread, interleaved within each iteration and
// divided by the FMA probe's own 2-thread speed-up measured alongside
// (counter scaling_over_probe): thread scaling a busy machine cannot fake.
void RegisterMatMulScalingBenchmarks(threading::ThreadPool& one_thread,
                                     threading::ThreadPool& two_threads);

// Compressed weights (bf16, f16, q8_0, q4_0): MatVecRoofline rows (read_bw_fraction
// against a read of the matrix's own bytes, interleaved; 1 and 2 threads), MatMul with
// fma_peak_fraction, and MatVec fast vs scalar twin.
void RegisterCompressedBenchmarks(threading::ThreadPool& one_thread,
                                  threading::ThreadPool& two_threads);

}  // namespace kvrt::bench
