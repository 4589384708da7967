// Precomputed RoPE tables (spec/model.md §6).
//
// inv_f[i] = pow(base, (−2·i)/hw) / factor[i] for i < hw/2 (the frequency factors of
// ModelConfig::rope_frequency_factors; without them, or for a factor of 1, the bare
// power); cos[p][i] = cos(p·inv_f[i]·s) and
// sin[p][i] = sin(p·inv_f[i]·s) for every absolute position p < P (±0 stored as +0),
// with s the linear scaling's frequency scale (ModelConfig::rope_freq_scale; the
// last product, as in ggml's rope, and exact for s = 1).
// The first tabulated() positions are precomputed; a longer context (a llama2.c
// file declaring 2^20 positions) computes the rest when a step needs them, with
// the same libm calls, so every value is bit-identical to a tabulated one and
// the tables' memory does not grow with the declared context.
#pragma once

#include <cstddef>
#include <span>

#include "core/buffer.h"
#include "kvrt/error.h"

namespace kvrt {

class RopeTable {
 public:
  // Largest table kept in memory (entries per table). A configuration asking for
  // more (a context of millions of positions) is rejected before allocating.
  static constexpr size_t kMaxEntries = size_t{1} << 28;
  // Most entries per table precomputed (8 MiB of doubles); positions past them
  // are computed on demand.
  static constexpr size_t kTabulatedEntries = size_t{1} << 20;

  // Checks, without building anything, that the tables are computable: at most
  // kMaxEntries entries and every inverse frequency and angle finite (the sine and
  // cosine of a finite angle always are).
  static Result<void> Validate(size_t head_width, size_t positions, double base, double freq_scale,
                               std::span<const double> factors = {});
  static Result<RopeTable> Create(size_t head_width, size_t positions, double base, double freq_scale,
                                  std::span<const double> factors = {});

  size_t head_width() const { return pairs_ * 2; }
  size_t pairs() const { return pairs_; }
  size_t positions() const { return positions_; }
  double base() const { return base_; }
  double freq_scale() const { return freq_scale_; }
  std::span<const double> inverse_frequencies() const { return inverse_frequency_.span(); }
  // Positions whose values are stored: min(positions, kTabulatedEntries / pairs).
  size_t tabulated() const { return tabulated_; }
  // Stored rows, for position < tabulated() only.
  const double* cos(size_t position) const { return cos_.data() + position * pairs_; }
  const double* sin(size_t position) const { return sin_.data() + position * pairs_; }
  // cos and sin of pair i at `position` (< positions()), stored or computed.
  void At(size_t position, size_t i, double* cos, double* sin) const;
  // The pairs() values of `position` into cos and sin.
  void Fill(size_t position, double* cos, double* sin) const;

 private:
  RopeTable() = default;
  size_t pairs_ = 0;
  size_t positions_ = 0;
  size_t tabulated_ = 0;
  double base_ = 0.0;
  double freq_scale_ = 1.0;
  Buffer<double> inverse_frequency_;
  Buffer<double> cos_;  // [tabulated, pairs]
  Buffer<double> sin_;  // [tabulated, pairs]
};

}  // namespace kvrt
