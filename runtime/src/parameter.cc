#include "kvrt/parameter.h"

#include <algorithm>
#include <thread>

namespace kvrt {
namespace {

std::atomic<uint64_t> next_parameter_id{1};

}  // namespace

Parameter::Parameter(std::string name, std::vector<size_t> shape, Buffer<double> values)
    : name_(std::move(name)),
      shape_(std::move(shape)),
      values_(std::move(values)),
      id_(next_parameter_id.fetch_add(1, std::memory_order_relaxed)) {}

Result<std::shared_ptr<Parameter>> Parameter::Create(std::string name, std::vector<size_t> shape,
                                                     std::span<const double> values) {
  std::optional<Buffer<double>> buffer = Buffer<double>::Allocate(values.size());
  if (!buffer) {
    return Fail(
        ErrorCode::kAllocationFailed, {{"elements", uint64_t{values.size()}}},
        "could not allocate " + std::to_string(values.size()) + " parameter values for " + name);
  }
  std::copy(values.begin(), values.end(), buffer->data());
  return std::shared_ptr<Parameter>(
      new Parameter(std::move(name), std::move(shape), std::move(*buffer)));
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

void ParameterWriter::AdvanceRevision(Parameter& parameter) {
  parameter.revision_.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace kvrt
