// Packed weight matrices for the matrix benchmarks, and the panel-range tasks the
// engine would hand to the pool.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernel_bench_support.h"
#include "kvrt/simd/pack_matrix.h"
#include "kvrt/threading/thread_pool.h"

namespace kvrt::bench {

// A random [K, N] matrix packed by PackMatrix into 64-byte aligned storage.
template <class T>
struct PackedWeights {
  PackedWeights(size_t rows, size_t cols)
      : storage(hwy::AllocateAligned<T>(simd::PackedElementCount<T>(rows, cols))) {
    const auto dense = RandomRow<T>(rows * cols, -1, 1, rows * 31 + cols);
    view = simd::PackMatrix(dense.get(), rows, cols, false, storage.get());
  }
  size_t bytes() const { return simd::PackedElementCount<T>(view.rows, view.cols) * sizeof(T); }

  AlignedRow<T> storage;
  simd::PackedMatrixView<T> view;
};

// Panels per pool task: a task size computed from the matrix, never from the thread
// count (threading/thread_pool.h), as the engine must do for bit-identical results.
inline constexpr size_t kPanelsPerTask = 4;

inline size_t PanelTasks(size_t panels) { return (panels + kPanelsPerTask - 1) / kPanelsPerTask; }

// Runs fn(panel_begin, panel_end) for every task over `pool`.
template <class Fn>
void ForEachPanelRange(threading::ThreadPool& pool, size_t panels, Fn&& fn) {
  pool.ParallelFor(PanelTasks(panels), [&](size_t task, size_t) {
    const size_t begin = task * kPanelsPerTask;
    fn(begin, std::min(panels, begin + kPanelsPerTask));
  });
}

// Memory far larger than the last-level cache holding many copies of one packed
// matrix: cycling through the copies makes every MatVec read its weights from DRAM.
// One arena is shared by all "weights not in cache" rows (they run one at a time) and
// is refilled only when a row with a different matrix shape or type asks for it.
class ColdWeightArena {
 public:
  explicit ColdWeightArena(size_t bytes) : bytes_(bytes) {}

  template <class T>
  std::vector<simd::PackedMatrixView<T>> Copies(size_t rows, size_t cols) {
    const size_t packed_bytes = simd::PackedElementCount<T>(rows, cols) * sizeof(T);
    const size_t stride = (packed_bytes + 4095) / 4096 * 4096;  // page-aligned copies
    const size_t count = bytes_ / stride;
    const std::string key = std::string(TypeName<T>()) + std::to_string(rows) + "x" + std::to_string(cols);
    if (storage_ == nullptr) storage_ = hwy::AllocateAligned<unsigned char>(bytes_);
    if (key != key_) {
      const PackedWeights<T> master(rows, cols);
      for (size_t i = 0; i < count; ++i) {
        std::memcpy(storage_.get() + i * stride, master.storage.get(), packed_bytes);
      }
      key_ = key;
    }
    std::vector<simd::PackedMatrixView<T>> copies(count);
    for (size_t i = 0; i < count; ++i) {
      copies[i] = simd::PackedMatrixView<T>::Panels(
          reinterpret_cast<const T*>(storage_.get() + i * stride), rows, cols);
    }
    return copies;
  }
  // The whole arena (valid after Copies), for measuring the read bandwidth over it.
  const void* data() const { return storage_.get(); }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_;
  std::string key_;
  hwy::AlignedFreeUniquePtr<unsigned char[]> storage_;
};

}  // namespace kvrt::bench
