// Registration of the engine benchmarks (engine_bench.cc).
#pragma once

#include "kvrt/threading/thread_pool.h"
#include "kvrt/weight_format.h"
#include "model/decoder_model.h"

namespace kvrt::bench {

// Bytes a decode step reads of `model`'s weights in `format`: every matrix in the
// layout the engine packed it in (compressed panels, or f32 panels), and the f32
// gains (weights_bench.cc).
double FormatWeightBytes(const DecoderModel& model, WeightFormat format);

void RegisterEngineBenchmarks(threading::ThreadPool& one_thread, threading::ThreadPool& two_threads);
// Weights/<model>/<format>/{decode,prefill}/threads:<n> (weights_bench.cc).
void RegisterWeightBenchmarks(threading::ThreadPool& one_thread, threading::ThreadPool& two_threads);
// BatchedDecode rows: B sequences decoding in B slots (batching_bench.cc).
void RegisterBatchingBenchmarks(threading::ThreadPool& one_thread, threading::ThreadPool& two_threads);
// PrefillScaling/15M/tokens:256: 2/1-thread prefill over the pool probe, interleaved
// (prefill_scaling_bench.cc).
void RegisterPrefillScalingBenchmarks(threading::ThreadPool& one_thread, threading::ThreadPool& two_threads);
// KvDecode rows: decode at depths 1 to 16k per KV cache type (kv_cache_bench.cc).
void RegisterKvCacheBenchmarks(threading::ThreadPool& one_thread, threading::ThreadPool& two_threads);
// BenchMirror rows: kvrt bench's decode rows on 110M q8_0, timed by Google Benchmark
// (bench_cli_mirror_bench.cc).
void RegisterBenchMirrorBenchmarks(threading::ThreadPool& one_thread, threading::ThreadPool& two_threads);

}  // namespace kvrt::bench
