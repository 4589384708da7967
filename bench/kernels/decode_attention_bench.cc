// Decode attention from memory, per KV cache element type (issue 43): one query row
// attends over every lane of a cache whose K/V rows do not fit in the caches, as a
// decode step does over its layers × KV heads.
//   DecodeAttention/kv:<f32|f16|bf16|q8_0>/<fast|twin>/head_width:64/context:<c>/lanes:<l>
// Each iteration runs AttendPrefix once per lane (l lanes of c positions); the fast
// rows report read_bw_fraction: the lanes' K/V bytes over the time, against a read of
// the same bytes taken right before the timed loop (one thread). The engine's
// KvDecode rows add the weights; these isolate the attention's share.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "kernel_bench_support.h"
#include "kernel_benchmarks.h"
#include "kvrt/machine/machine_limits.h"
#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/simd/prefix_attention.h"

namespace kvrt::bench {
namespace {

using benchmark::State;

// One cache's lanes: keys then values of each lane, `context` rows of stored_width
// elements each, filled from random f32 rows in [-1, 1) rounded to K.
template <class K>
class LaneArena {
 public:
  LaneArena(size_t lanes, size_t context, size_t head_width)
      : lanes_(lanes), context_(context), head_width_(head_width), stride_(StoredWidth(head_width)) {
    elements_ = hwy::AllocateAligned<K>(2 * lanes * context * stride_);
    if constexpr (std::is_same_v<K, simd::Q8>) {
      scales_ = hwy::AllocateAligned<simd::Half>(2 * lanes * context * stride_ / simd::kQ8KvBlock);
    }
    const auto row = RandomRow<float>(head_width, -1, 1, 7);
    for (size_t r = 0; r < 2 * lanes * context; ++r) {
      row[r % head_width] = -row[r % head_width];  // rows differ without a generator call each
      Store(row.get(), r);
    }
  }

  size_t bytes() const {
    const size_t rows = 2 * lanes_ * context_;
    if constexpr (std::is_same_v<K, simd::Q8>) {
      return rows * (stride_ + stride_ / simd::kQ8KvBlock * sizeof(simd::Half));
    } else {
      return rows * stride_ * sizeof(K);
    }
  }
  const void* data() const { return elements_.get(); }

  simd::PrefixSegment<K> Lane(size_t lane) const {
    const size_t keys = 2 * lane * context_ * stride_, values = keys + context_ * stride_;
    if constexpr (std::is_same_v<K, simd::Q8>) {
      const simd::Q8* origin = elements_.get();
      return {{origin + keys, origin, scales_.get()}, {origin + values, origin, scales_.get()}, stride_, context_};
    } else {
      return {elements_.get() + keys, elements_.get() + values, stride_, context_};
    }
  }

 private:
  static size_t StoredWidth(size_t head_width) {
    return std::is_same_v<K, simd::Q8> ? simd::Q8KvRowQuants(head_width) : head_width;
  }
  void Store(const float* row, size_t r) {
    K* out = elements_.get() + r * stride_;
    if constexpr (std::is_same_v<K, simd::Q8>) {
      simd::QuantizeKvRowQ8_0(row, head_width_, out, scales_.get() + r * stride_ / simd::kQ8KvBlock);
    } else {
      for (size_t i = 0; i < head_width_; ++i) {
        if constexpr (std::is_same_v<K, float>) out[i] = row[i];
        if constexpr (std::is_same_v<K, simd::Half>) out[i] = {simd::F32ToF16(row[i])};
        if constexpr (std::is_same_v<K, simd::Bf16>) out[i] = {simd::F32ToBf16(row[i])};
      }
    }
  }

  size_t lanes_, context_, head_width_, stride_;
  hwy::AlignedFreeUniquePtr<K[]> elements_;
  hwy::AlignedFreeUniquePtr<simd::Half[]> scales_;
};

template <class K, bool kFast>
void DecodeAttention(State& state, size_t head_width, size_t context, size_t lanes,
                     threading::ThreadPool* pool) {
  const LaneArena<K> arena(lanes, context, head_width);
  const auto q = RandomRow<float>(head_width, -1, 1, 1);
  auto out = RandomRow<float>(head_width, 0, 1);
  auto scratch = RandomRow<float>(simd::PrefixAttentionScratch(head_width, context), 0, 1);
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_width));
  const double bandwidth = kFast ? machine::MeasureReadBytesPerSecond(*pool, arena.data(), arena.bytes()) : 0;
  const LoopClock clock;
  for (auto _ : state) {
    for (size_t lane = 0; lane < lanes; ++lane) {
      if constexpr (kFast) {
        simd::AttendPrefix(q.get(), arena.Lane(lane), {}, head_width, scale, scratch.get(), out.get());
      } else {
        simd::AttendPrefixScalar(q.get(), arena.Lane(lane), {}, head_width, scale, scratch.get(), out.get());
      }
    }
    benchmark::ClobberMemory();
  }
  const double bytes = static_cast<double>(arena.bytes());
  SetThroughput(state, static_cast<double>(lanes * context), bytes);
  if constexpr (kFast) {
    state.counters["read_bw_fraction"] = clock.FractionOfLimit(state, bytes, bandwidth);
    state.counters["read_bw_GBps"] = bandwidth / 1e9;
  }
}

template <class K>
void RegisterForType(const char* type, threading::ThreadPool& one_thread) {
  constexpr size_t kHeadWidth = 64, kLanes = 64;
  for (size_t context : {1024, 4096}) {
    const std::string shape = "head_width:" + std::to_string(kHeadWidth) + "/context:" + std::to_string(context) +
                              "/lanes:" + std::to_string(kLanes);
    const std::string prefix = std::string("DecodeAttention/kv:") + type;
    Timed(benchmark::RegisterBenchmark((prefix + "/fast/" + shape).c_str(), DecodeAttention<K, true>, kHeadWidth,
                                       context, kLanes, &one_thread));
    Timed(benchmark::RegisterBenchmark((prefix + "/twin/" + shape).c_str(), DecodeAttention<K, false>, kHeadWidth,
                                       context, kLanes, &one_thread));
  }
}

}  // namespace

void RegisterDecodeAttentionBenchmarks(threading::ThreadPool& one_thread) {
  RegisterForType<float>("f32", one_thread);
  RegisterForType<simd::Half>("f16", one_thread);
  RegisterForType<simd::Bf16>("bf16", one_thread);
  RegisterForType<simd::Q8>("q8_0", one_thread);
}

}  // namespace kvrt::bench
