#include "model/parameter_access.h"
#include "model/parameter.h"

#include <algorithm>
#include <new>
#include <thread>

#include "core/checked_math.h"
#include "model/panel_layout.h"

namespace kvrt {
namespace {

std::atomic<uint64_t> next_parameter_id{1};

// The node and its shared_ptr control block, or the name and shape copies,
// are heap allocations: out of memory there is a typed error as well.
std::unexpected<Error> NodeAllocationFailed() {
  return Fail(ErrorCode::kAllocationFailed, {}, "could not allocate a parameter node");
}

}  // namespace

Parameter::Parameter(std::string name, std::vector<size_t> shape, ParameterLayout layout,
                     Buffer<double> values, Buffer<float> panels, StoredWeights stored)
    : name_(std::move(name)),
      shape_(std::move(shape)),
      element_count_(CheckedProduct(shape_).value_or(0)),
      layout_(layout),
      values_(std::move(values)),
      panels_(std::move(panels)),
      stored_(std::move(stored)),
      id_(next_parameter_id.fetch_add(1, std::memory_order_relaxed)) {}

Result<std::shared_ptr<Parameter>> Parameter::Create(std::string name, std::vector<size_t> shape,
                                                     std::span<const double> values,
                                                     StoredWeights stored) try {
  std::optional<Buffer<double>> buffer = Buffer<double>::Allocate(values.size(), Pages::kHuge);
  if (!buffer) {
    return Fail(
        ErrorCode::kAllocationFailed, {{"elements", uint64_t{values.size()}}},
        "could not allocate " + std::to_string(values.size()) + " parameter values for " + name);
  }
  std::copy(values.begin(), values.end(), buffer->data());
  return std::shared_ptr<Parameter>(new Parameter(std::move(name), std::move(shape),
                                                  ParameterLayout::kDenseF64, std::move(*buffer),
                                                  Buffer<float>(), std::move(stored)));
} catch (const std::bad_alloc&) {
  return NodeAllocationFailed();
}

Result<std::shared_ptr<Parameter>> Parameter::CreatePanels(std::string name,
                                                           std::vector<size_t> shape,
                                                           ParameterLayout layout,
                                                           Buffer<float> panels,
                                                           StoredWeights stored) try {
  const bool transposed = layout == ParameterLayout::kTransposedPanelsF32;
  if (layout == ParameterLayout::kDenseF64 || shape.size() != 2 ||
      panels.size() != simd::PackedElementCount<float>(transposed ? shape[1] : shape[0],
                                                       transposed ? shape[0] : shape[1])) {
    return Fail(ErrorCode::kParameterShapeMismatch, {{"name", name}},
                "panels of " + name + " do not match its shape");
  }
  return std::shared_ptr<Parameter>(new Parameter(std::move(name), std::move(shape), layout,
                                                  Buffer<double>(), std::move(panels),
                                                  std::move(stored)));
} catch (const std::bad_alloc&) {
  return NodeAllocationFailed();
}

Result<std::shared_ptr<Parameter>> Parameter::CopyAsNewNode() const try {
  // The stored bytes describe the values only at revision 0, like the copy's.
  StoredWeights stored = stored_;
  if (revision() != 0) stored = {};
  if (is_dense()) return Create(name_, shape_, values_.span(), std::move(stored));
  std::optional<Buffer<float>> copy = Buffer<float>::Allocate(panels_.size(), Pages::kHuge);
  if (!copy) {
    return Fail(ErrorCode::kAllocationFailed, {{"elements", uint64_t{panels_.size()}}},
                "could not allocate a copy of " + name_);
  }
  std::copy(panels_.data(), panels_.data() + panels_.size(), copy->data());
  return CreatePanels(name_, shape_, layout_, std::move(*copy), std::move(stored));
} catch (const std::bad_alloc&) {
  return NodeAllocationFailed();  // the copies of the name and shape
}

void Parameter::ReadValues(std::span<double> out) const {
  if (is_dense()) {
    std::copy(values_.data(), values_.data() + element_count_, out.begin());
    return;
  }
  const bool transposed = layout_ == ParameterLayout::kTransposedPanelsF32;
  for (size_t row = 0; row < shape_[0]; ++row) {
    for (size_t column = 0; column < shape_[1]; ++column) {
      const detail::PanelCoordinates at =
          detail::PanelCoordinatesOf(row, column, shape_[0], shape_[1], transposed);
      out[row * shape_[1] + column] = panels_[detail::PanelOffset<float>(at.k, at.n, at.rows)];
    }
  }
}

void Parameter::AcquireShared() const {
  int64_t state = borrow_state_.load(std::memory_order_relaxed);
  for (;;) {
    if (state < 0) {
      // An update is copying its committed values in; that takes microseconds.
      std::this_thread::yield();
      state = borrow_state_.load(std::memory_order_relaxed);
      continue;
    }
    if (borrow_state_.compare_exchange_weak(state, state + 1, std::memory_order_acquire,
                                            std::memory_order_relaxed)) {
      return;
    }
  }
}

void Parameter::ReleaseShared() const { borrow_state_.fetch_sub(1, std::memory_order_release); }

int64_t Parameter::shared_borrows() const {
  const int64_t state = borrow_state_.load(std::memory_order_acquire);
  return state > 0 ? state : 0;
}

SharedBorrows::SharedBorrows(std::vector<ParameterPtr> parameters)
    : parameters_(std::move(parameters)) {
  for (const ParameterPtr& parameter : parameters_) parameter->AcquireShared();
}

SharedBorrows& SharedBorrows::operator=(SharedBorrows&& other) noexcept {
  if (this != &other) {
    Release();
    parameters_ = std::move(other.parameters_);
    other.parameters_.clear();
  }
  return *this;
}

SharedBorrows::~SharedBorrows() { Release(); }

void SharedBorrows::Release() {
  for (const ParameterPtr& parameter : parameters_) parameter->ReleaseShared();
  parameters_.clear();
}

bool ParameterWriter::TryAcquireExclusive(Parameter& parameter) {
  int64_t expected = 0;
  return parameter.borrow_state_.compare_exchange_strong(expected, -1, std::memory_order_acquire,
                                                         std::memory_order_relaxed);
}

void ParameterWriter::ReleaseExclusive(Parameter& parameter) {
  parameter.borrow_state_.store(0, std::memory_order_release);
}

void ParameterWriter::WriteValues(Parameter& parameter, std::span<const double> values) {
  if (parameter.is_dense()) {
    std::copy(values.begin(), values.end(), parameter.values_.data());
    return;
  }
  const std::vector<size_t>& shape = parameter.shape_;
  const bool transposed = parameter.layout_ == ParameterLayout::kTransposedPanelsF32;
  for (size_t row = 0; row < shape[0]; ++row) {
    for (size_t column = 0; column < shape[1]; ++column) {
      const detail::PanelCoordinates at =
          detail::PanelCoordinatesOf(row, column, shape[0], shape[1], transposed);
      parameter.panels_[detail::PanelOffset<float>(at.k, at.n, at.rows)] =
          static_cast<float>(values[row * shape[1] + column]);
    }
  }
}

void ParameterWriter::AdvanceRevision(Parameter& parameter) {
  parameter.revision_.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace kvrt
