// How sessions and updates take parameter nodes: shared borrows for readers,
// exclusive access for DecoderModel::UpdateParameters (spec/kv-cache.md §5).
// Internal: an embedder reads parameters through kvrt/parameter.h only.
#pragma once

#include <span>
#include <vector>

#include "model/parameter.h"

namespace kvrt {

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
  // Replaces the values (row-major f64) in the parameter's own layout.
  static void WriteValues(Parameter& parameter, std::span<const double> values);
  static void AdvanceRevision(Parameter& parameter);
};

}  // namespace kvrt
