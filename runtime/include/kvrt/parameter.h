// A named model parameter with identity and value revision (spec/kv-cache.md §5).
//
// A Parameter is a shared node: copying a model shares its nodes, rebuilding or
// loading one makes new nodes even when the values are equal. Identity is the node
// itself (bindings hold a shared_ptr, so a node's address cannot be reused while a
// cache refers to it). The value revision starts at 0 and advances by one per
// committed update.
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

#include "kvrt/buffer.h"
#include "kvrt/error.h"

namespace kvrt {

class Parameter {
 public:
  // Copies `values` into a new node at revision 0. Fails with AllocationFailed.
  static Result<std::shared_ptr<Parameter>> Create(std::string name, std::vector<size_t> shape,
                                                   std::span<const double> values);

  Parameter(const Parameter&) = delete;
  Parameter& operator=(const Parameter&) = delete;

  const std::string& name() const { return name_; }
  const std::vector<size_t>& shape() const { return shape_; }
  size_t element_count() const { return values_.size(); }
  // Row-major f64 values, shape `shape()`. Stable while a shared borrow is held.
  std::span<const double> values() const { return values_.span(); }
  uint64_t revision() const { return revision_.load(std::memory_order_acquire); }
  // Process-unique, never reused: handy for logging and hashing identities.
  uint64_t id() const { return id_; }

  // Shared borrows (sessions, uncached forwards). Waits only while an update is
  // writing, which never blocks on anything else.
  void AcquireShared() const;
  void ReleaseShared() const;
  // Number of shared borrows currently held.
  int64_t shared_borrows() const;

 private:
  friend class ParameterWriter;
  Parameter(std::string name, std::vector<size_t> shape, Buffer<double> values);

  std::string name_;
  std::vector<size_t> shape_;
  Buffer<double> values_;
  std::atomic<uint64_t> revision_{0};
  uint64_t id_;
  // > 0: that many shared borrows; 0: free; -1: an update holds it exclusively.
  mutable std::atomic<int64_t> borrow_state_{0};
};

using ParameterPtr = std::shared_ptr<Parameter>;

// Holds a shared borrow of every parameter in a list for its lifetime (RAII).
class SharedBorrows {
 public:
  SharedBorrows() = default;
  explicit SharedBorrows(std::vector<ParameterPtr> parameters);
  SharedBorrows(SharedBorrows&& other) noexcept = default;
  SharedBorrows& operator=(SharedBorrows&& other) noexcept;
  SharedBorrows(const SharedBorrows&) = delete;
  SharedBorrows& operator=(const SharedBorrows&) = delete;
  ~SharedBorrows();

 private:
  void Release();
  std::vector<ParameterPtr> parameters_;
};

// The write side, used only by DecoderModel::UpdateParameters: exclusive borrows in
// list order, value writes and revision advances.
class ParameterWriter {
 public:
  static bool TryAcquireExclusive(Parameter& parameter);
  static void ReleaseExclusive(Parameter& parameter);
  static std::span<double> MutableValues(Parameter& parameter) { return parameter.values_.span(); }
  static void AdvanceRevision(Parameter& parameter);
};

}  // namespace kvrt
