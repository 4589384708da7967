// A named model parameter with identity and value revision (spec/kv-cache.md §5).
//
// A Parameter is a shared node: copying a model shares its nodes, rebuilding or
// loading one makes new nodes even when the values are equal. Identity is the node
// itself (bindings hold a shared_ptr, so a node's address cannot be reused while a
// cache refers to it). The value revision starts at 0 and advances by one per
// committed update.
//
// Storage: LLMCP35 and seeded models keep every parameter as row-major f64 (the
// reference path reads those exact values). Models built for the fast f32 engine
// only (large synthetic or llama2.c models) keep matrices in the engine's f32
// column-panel layout instead, so no second full copy of the weights exists;
// ReadValues converts either layout back to row-major f64.
//
// Borrowing: a session holds a shared borrow of every parameter for its lifetime;
// an update takes an exclusive borrow and fails at once when any shared borrow is
// held. The borrow state is an atomic counter, so sessions may live on any thread
// and release on another one.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "kvrt/error.h"
#include "kvrt/weight_format.h"

namespace kvrt {

enum class ParameterLayout : uint8_t {
  kDenseF64,  // row-major f64 values of shape()
  // f32 column panels (simd/packed_matrix.h, kPanelWidth<float>) of the matrix
  // W = shape [K, N] applied as x·W.
  kPanelsF32,
  // f32 column panels of the transpose: a [V, D] table stored as the [D, V] matrix
  // of z·tableᵀ (a tied embedding kept in the layout of the vocabulary head).
  kTransposedPanelsF32,
};

// A matrix parameter's bytes as its file keeps them, when that is one of the
// compressed weight formats (a GGUF tensor in bf16, f16, q8_0 or q4_0): ggml rows,
// N rows of K elements of the x·W matrix [K, N] (for the token table [V, D]: V
// rows of D). The fast engine uses them as stored (WeightFormat::kAsStored); the
// parameter's values are their exact dequantization.
struct StoredWeights {
  WeightFormat format = WeightFormat::kF32;  // kF32: nothing stored
  std::span<const uint8_t> bytes;
  std::shared_ptr<const void> owner;  // keeps `bytes` alive (the file mapping)
};

class Parameter {
 public:
  // Copies `values` into a new node at revision 0. Fails with AllocationFailed.
  static Result<std::shared_ptr<Parameter>> Create(std::string name, std::vector<size_t> shape,
                                                   std::span<const double> values,
                                                   StoredWeights stored = {});
  // A node over f32 panels of a 2-D `shape` (layout kPanelsF32 or
  // kTransposedPanelsF32); `panels` must hold PackedElementCount<float> of the
  // packed matrix.
  static Result<std::shared_ptr<Parameter>> CreatePanels(std::string name, std::vector<size_t> shape,
                                                         ParameterLayout layout,
                                                         Buffer<float> panels,
                                                         StoredWeights stored = {});

  Parameter(const Parameter&) = delete;
  Parameter& operator=(const Parameter&) = delete;

  const std::string& name() const { return name_; }
  const std::vector<size_t>& shape() const { return shape_; }
  size_t element_count() const { return element_count_; }
  ParameterLayout layout() const { return layout_; }
  bool is_dense() const { return layout_ == ParameterLayout::kDenseF64; }
  // Row-major f64 values of a dense parameter (empty for panel layouts). Stable
  // while a shared borrow is held.
  std::span<const double> values() const { return values_.span(); }
  // The f32 panels of a panel-layout parameter (empty for dense ones).
  std::span<const float> panels() const { return panels_.span(); }
  // Row-major f64 values in any layout; `out` holds element_count() values.
  void ReadValues(std::span<double> out) const;
  // A new node (revision 0) with this node's name, shape, layout and values.
  Result<std::shared_ptr<Parameter>> CopyAsNewNode() const;
  uint64_t revision() const { return revision_.load(std::memory_order_acquire); }
  // The stored compressed bytes, while they still describe the values (revision
  // 0: an update makes the new values the truth); nullptr otherwise.
  const StoredWeights* stored() const {
    return stored_.format != WeightFormat::kF32 && revision() == 0 ? &stored_ : nullptr;
  }
  // Process-unique, never reused: handy for logging and hashing identities.
  uint64_t id() const { return id_; }

  // Number of shared borrows currently held (sessions and uncached forwards
  // reading this node).
  int64_t shared_borrows() const;

 private:
  // The borrow machinery (model/parameter_access.h): readers take shared
  // borrows, DecoderModel::UpdateParameters an exclusive one.
  friend class SharedBorrows;
  friend class ParameterWriter;
  // Waits only while an update is writing, which never blocks on anything else.
  void AcquireShared() const;
  void ReleaseShared() const;
  Parameter(std::string name, std::vector<size_t> shape, ParameterLayout layout,
            Buffer<double> values, Buffer<float> panels, StoredWeights stored);

  std::string name_;
  std::vector<size_t> shape_;
  size_t element_count_ = 0;
  ParameterLayout layout_ = ParameterLayout::kDenseF64;
  Buffer<double> values_;  // kDenseF64
  Buffer<float> panels_;   // panel layouts
  StoredWeights stored_;   // the file's compressed bytes, if any
  std::atomic<uint64_t> revision_{0};
  uint64_t id_;
  // > 0: that many shared borrows; 0: free; -1: an update holds it exclusively.
  mutable std::atomic<int64_t> borrow_state_{0};
};

using ParameterPtr = std::shared_ptr<Parameter>;

}  // namespace kvrt
