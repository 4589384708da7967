// Precomputed RoPE tables (spec/model.md §6).
//
// inv_f[i] = pow(base, (−2·i)/hw) for i < hw/2; cos[p][i] = cos(p·inv_f[i]) and
// sin[p][i] = sin(p·inv_f[i]) for every absolute position p < P (±0 stored as +0).
// Table values are only read during a forward pass, never recomputed.
#pragma once

#include <cstddef>
#include <span>

#include "kvrt/buffer.h"
#include "kvrt/error.h"

namespace kvrt {

class RopeTable {
 public:
  // Largest table kept in memory (entries per table). A configuration asking for
  // more (a context of millions of positions) is rejected before allocating.
  static constexpr size_t kMaxEntries = size_t{1} << 28;

  // Checks, without building anything, that the tables are computable: at most
  // kMaxEntries entries and every inverse frequency and angle finite (the sine and
  // cosine of a finite angle always are).
  static Result<void> Validate(size_t head_width, size_t positions, double base);
  static Result<RopeTable> Create(size_t head_width, size_t positions, double base);

  size_t head_width() const { return pairs_ * 2; }
  size_t pairs() const { return pairs_; }
  size_t positions() const { return positions_; }
  double base() const { return base_; }
  std::span<const double> inverse_frequencies() const { return inverse_frequency_.span(); }
  const double* cos(size_t position) const { return cos_.data() + position * pairs_; }
  const double* sin(size_t position) const { return sin_.data() + position * pairs_; }

 private:
  RopeTable() = default;
  size_t pairs_ = 0;
  size_t positions_ = 0;
  double base_ = 0.0;
  Buffer<double> inverse_frequency_;
  Buffer<double> cos_;  // [positions, pairs]
  Buffer<double> sin_;  // [positions, pairs]
};

}  // namespace kvrt
