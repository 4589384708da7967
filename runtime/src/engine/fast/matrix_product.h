// One parallel pass of the engine over one or more packed matrices that read the
// same input rows: Q|K|V, gate|up, or a single matrix. Each part writes its own
// columns of a shared output row, so the matrices act as one fused matrix without
// being copied into one. A part is either f32/f64 panels or (f32 engine only) a
// compressed matrix (kvrt/simd/compressed_matrix.h); parts of one product may
// differ in type (a fallback keeps one matrix in f16 next to q8_0 ones).
//
// With int8 activations (weights packed with EngineOptions::int8_activations) the
// q8_0/q4_0 parts are in the quad layout: Run first rounds the input rows to q8_0
// blocks into the engine's Int8Rows scratch (row by row, so a row's result never
// depends on the others), then those parts run simd::MatMulInt8. With bf16
// activations (bf16 parts packed in the pair layout) Run rounds the input rows to
// bf16 into RoundedActivations::bf16 the same way, and those parts run
// simd::MatMulBf16, for one row and for many alike.
//
// Work is cut into tasks from the problem size alone (panel tiles, and row tiles
// for several rows), never from the thread count. Every output element is computed
// by one kernel call over all of K in a fixed order, so the result is the same
// bit for bit for any number of threads.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "weights/engine_weights.h"
#include "kvrt/simd/bf16_activations.h"
#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/simd/int8_activations.h"
#include "kvrt/simd/matmul.h"
#include "kvrt/simd/matvec.h"
#include "kvrt/threading/thread_pool.h"

namespace kvrt::detail {

// The engine's storage for a product's input rows rounded for the opt-in kernels
// (each `k` 0 where no part takes that rounding).
struct RoundedActivations {
  simd::Int8Rows int8;
  simd::Bf16Rows bf16;
};

template <class T>
class MatrixProduct {
 public:
  MatrixProduct() = default;
  // `parts` in output-column order; part i writes columns [offset_i, offset_i + N_i).
  explicit MatrixProduct(std::vector<const PackedWeight<T>*> parts) {
    size_t offset = 0, total_panels = 0;
    for (const PackedWeight<T>* part : parts) {
      const bool compressed = part->is_compressed();
      const size_t panels = compressed ? part->compressed.view.panels() : part->view.panels();
      const simd::CompressedLayout layout =
          compressed ? part->compressed.view.layout : simd::CompressedLayout::kRows;
      const bool int8 = layout == simd::CompressedLayout::kInt8Quads;
      const bool bf16 = layout == simd::CompressedLayout::kBf16Pairs;
      parts_.push_back(
          {&part->view, compressed ? &part->compressed.view : nullptr, offset, panels, int8, bf16});
      if (int8) int8_rows_k_ = part->compressed.view.rows;
      if (bf16) bf16_rows_k_ = part->compressed.view.rows;
      offset += part->cols();
      total_panels += panels;
    }
    width_ = offset;
    // One row: tiles of 4 panels (8 for a pass of 256 panels or more), so that
    // every task streams four panels side by side, the matrix-vector kernels'
    // widest group: a task of one or two panels is bound by the latency of its
    // few FMA chains, not by reading its weights (on a 288-wide model every
    // 288-column matrix is 9 panels). Wider tiles for several rows, where a task
    // also spans kRowTile rows.
    vector_tile_ = total_panels >= 256 ? 8 : 4;
    matrix_tile_ = std::clamp<size_t>(total_panels / 8, 1, 16);
    for (const bool several_rows : {false, true}) {
      std::vector<Task>& tasks = several_rows ? matrix_tasks_ : vector_tasks_;
      const size_t tile = several_rows ? matrix_tile_ : vector_tile_;
      for (uint32_t p = 0; p < parts_.size(); ++p) {
        const size_t panels = parts_[p].panels;
        for (size_t begin = 0; begin < panels; begin += tile) {
          tasks.push_back({p, static_cast<uint32_t>(begin),
                           static_cast<uint32_t>(std::min(panels, begin + tile))});
        }
      }
    }
  }

  // Output columns of all parts together.
  size_t width() const { return width_; }
  // K of the parts that take int8 activations (0: none does, Run needs no scratch).
  size_t int8_rows_k() const { return int8_rows_k_; }
  // K of the parts that take bf16 activations (0: none does).
  size_t bf16_rows_k() const { return bf16_rows_k_; }

  // c[r][offset + n] = Σ_k a[r][k]·W_part[k][n] for rows r < m; ldc ≥ width().
  // `rounded` (int8_rows_k() or bf16_rows_k() ≠ 0 only): storage for m rows of
  // int8_rows_k() quants and of bf16_rows_k() bf16 values.
  void Run(threading::ThreadPool* pool, const T* a, size_t lda, size_t m, T* c, size_t ldc,
           const RoundedActivations* rounded = nullptr) const {
    simd::Int8Rows quantized;
    simd::Bf16Rows halved;
    if constexpr (std::is_same_v<T, float>) {
      if (int8_rows_k_ != 0) {
        const simd::Int8Rows& int8 = rounded->int8;
        quantized = {int8.quants, int8.scales, int8.sums, int8.half_sums, int8_rows_k_};
      }
      if (bf16_rows_k_ != 0) halved = {rounded->bf16.pairs, bf16_rows_k_};
      const auto round_row = [&](size_t row) {
        if (int8_rows_k_ != 0) simd::QuantizeRow(a + row * lda, quantized, row);
        if (bf16_rows_k_ != 0) simd::RoundRowToBf16(a + row * lda, halved, row);
      };
      if (int8_rows_k_ != 0 || bf16_rows_k_ != 0) {
        if (m == 1) {
          round_row(0);
        } else {
          threading::ParallelFor(pool, m, [&](size_t row, size_t) { round_row(row); });
        }
      }
    }
    if (m == 1) {
      auto body = [&](size_t index, size_t) {
        const Task& task = vector_tasks_[index];
        const Part& part = parts_[task.part];
        if constexpr (std::is_same_v<T, float>) {
          if (part.int8) {
            simd::MatMulInt8(quantized, 0, 1, *part.compressed, c + part.offset, ldc,
                             task.panel_begin, task.panel_end);
            return;
          }
          if (part.bf16) {
            simd::MatMulBf16(halved, 0, 1, *part.compressed, c + part.offset, ldc, task.panel_begin,
                             task.panel_end);
            return;
          }
          if (part.compressed != nullptr) {
            simd::MatVec(*part.compressed, a, c + part.offset, task.panel_begin, task.panel_end);
            return;
          }
        }
        simd::MatVec(*part.view, a, c + part.offset, task.panel_begin, task.panel_end);
      };
      threading::ParallelFor(pool, vector_tasks_.size(), body);
      return;
    }
    const size_t row_tiles = (m + kRowTile - 1) / kRowTile;
    auto body = [&](size_t index, size_t) {
      const Task& task = matrix_tasks_[index % matrix_tasks_.size()];
      const size_t row = (index / matrix_tasks_.size()) * kRowTile;
      const size_t rows = std::min(kRowTile, m - row);
      const Part& part = parts_[task.part];
      if constexpr (std::is_same_v<T, float>) {
        if (part.int8) {
          simd::MatMulInt8(quantized, row, rows, *part.compressed, c + row * ldc + part.offset, ldc,
                           task.panel_begin, task.panel_end);
          return;
        }
        if (part.bf16) {
          simd::MatMulBf16(halved, row, rows, *part.compressed, c + row * ldc + part.offset, ldc,
                           task.panel_begin, task.panel_end);
          return;
        }
        if (part.compressed != nullptr) {
          simd::MatMul(a + row * lda, lda, rows, *part.compressed, c + row * ldc + part.offset, ldc,
                       task.panel_begin, task.panel_end);
          return;
        }
      }
      simd::MatMul(a + row * lda, lda, rows, *part.view, c + row * ldc + part.offset, ldc,
                   task.panel_begin, task.panel_end);
    };
    threading::ParallelFor(pool, row_tiles * matrix_tasks_.size(), body);
  }

 private:
  static constexpr size_t kRowTile = 128;

  struct Part {
    const simd::PackedMatrixView<T>* view;
    const simd::CompressedMatrixView* compressed;  // set: run the compressed kernels
    size_t offset;
    size_t panels;
    bool int8;  // compressed in the quad layout: runs on the int8 activations
    bool bf16;  // compressed in the pair layout: runs on the bf16 activations
  };
  struct Task {
    uint32_t part;
    uint32_t panel_begin;
    uint32_t panel_end;
  };

  std::vector<Part> parts_;
  std::vector<Task> vector_tasks_;
  std::vector<Task> matrix_tasks_;
  size_t width_ = 0;
  size_t int8_rows_k_ = 0;
  size_t bf16_rows_k_ = 0;
  size_t vector_tile_ = 1;
  size_t matrix_tile_ = 1;
};

}  // namespace kvrt::detail
