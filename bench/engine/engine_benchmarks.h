// Registration of the engine benchmarks (engine_bench.cc).
#pragma once

#include "kvrt/threading/thread_pool.h"

namespace kvrt::bench {

void RegisterEngineBenchmarks(threading::ThreadPool& one_thread, threading::ThreadPool& two_threads);
// Weights/<model>/<format>/{decode,prefill}/threads:<n> (weights_bench.cc).
void RegisterWeightBenchmarks(threading::ThreadPool& one_thread, threading::ThreadPool& two_threads);
// BatchedDecode rows: B sequences decoding in B slots (batching_bench.cc).
void RegisterBatchingBenchmarks(threading::ThreadPool& one_thread, threading::ThreadPool& two_threads);
// PrefillScaling/15M/tokens:256: 2/1-thread prefill over the pool probe, interleaved
// (prefill_scaling_bench.cc).
void RegisterPrefillScalingBenchmarks(threading::ThreadPool& one_thread, threading::ThreadPool& two_threads);

}  // namespace kvrt::bench
