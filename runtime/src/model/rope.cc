#include "model/rope.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace kvrt {

namespace {

// inv_f[i] = pow(base, (−2·i)/hw) / factor[i]: multiply first (exact), then one
// rounded division; libm pow, not exp(e·log b). Without factors (or a factor of
// 1) the bare power, the reference's value.
double InverseFrequency(size_t i, size_t head_width, double base, std::span<const double> factors) {
  const double exponent = (-2.0 * static_cast<double>(i)) / static_cast<double>(head_width);
  const double power = std::pow(base, exponent);
  return factors.empty() ? power : power / factors[i];
}

// cos(p·inv_f·s) and sin(p·inv_f·s): separate libm calls, as the reference; ±0 as
// +0. The scale multiplies last, so s = 1 leaves the reference's angle unchanged.
void Angle(size_t position, double inverse, double freq_scale, double* cos, double* sin) {
  const double angle = static_cast<double>(position) * inverse * freq_scale;
  const double c = std::cos(angle);
  const double s = std::sin(angle);
  *cos = c == 0.0 ? 0.0 : c;
  *sin = s == 0.0 ? 0.0 : s;
}

}  // namespace

Result<void> RopeTable::Validate(size_t head_width, size_t positions, double base, double freq_scale,
                                 std::span<const double> factors) {
  const size_t pairs = head_width / 2;
  if (!factors.empty() && factors.size() != pairs) {
    return Fail(ErrorCode::kInvalidRopeScale, {{"value", static_cast<double>(factors.size())}},
                "RoPE frequency factors must be one per rotated pair (" + std::to_string(pairs) + "), got " +
                    std::to_string(factors.size()));
  }
  if (pairs != 0 && positions > kMaxEntries / pairs) {
    return Fail(ErrorCode::kSizeOverflow, {{"context", std::string("rope table")}},
                "RoPE table of " + std::to_string(positions) + " positions x " +
                    std::to_string(pairs) + " pairs exceeds the supported maximum of " +
                    std::to_string(kMaxEntries) + " entries");
  }
  for (size_t i = 0; i < pairs; ++i) {
    const double inverse = InverseFrequency(i, head_width, base, factors);
    // Angles grow with the position, so the last one is the largest.
    const double last_angle =
        positions == 0 ? 0.0 : static_cast<double>(positions - 1) * inverse * freq_scale;
    if (!std::isfinite(inverse) || !std::isfinite(last_angle)) {
      return Fail(ErrorCode::kNonFiniteTableValue, {{"pair", uint64_t{i}}},
                  "RoPE angles of pair " + std::to_string(i) + " are not finite");
    }
  }
  return {};
}

Result<RopeTable> RopeTable::Create(size_t head_width, size_t positions, double base,
                                    double freq_scale, std::span<const double> factors) {
  if (Result<void> valid = Validate(head_width, positions, base, freq_scale, factors); !valid) {
    return Fail(std::move(valid.error()));
  }
  const size_t pairs = head_width / 2;
  RopeTable table;
  table.pairs_ = pairs;
  table.positions_ = positions;
  table.tabulated_ = pairs == 0 ? positions : std::min(positions, kTabulatedEntries / pairs);
  table.base_ = base;
  table.freq_scale_ = freq_scale;
  const size_t tabulated = table.tabulated_;
  auto inverse = Buffer<double>::Allocate(pairs);
  auto cos = Buffer<double>::Allocate(tabulated * pairs);
  auto sin = Buffer<double>::Allocate(tabulated * pairs);
  if (!inverse || !cos || !sin) {
    return Fail(ErrorCode::kAllocationFailed, {{"elements", uint64_t{2 * tabulated * pairs}}},
                "could not allocate the RoPE tables");
  }
  for (size_t i = 0; i < pairs; ++i) (*inverse)[i] = InverseFrequency(i, head_width, base, factors);
  for (size_t p = 0; p < tabulated; ++p) {
    for (size_t i = 0; i < pairs; ++i) {
      Angle(p, (*inverse)[i], freq_scale, &(*cos)[p * pairs + i], &(*sin)[p * pairs + i]);
    }
  }
  table.inverse_frequency_ = std::move(*inverse);
  table.cos_ = std::move(*cos);
  table.sin_ = std::move(*sin);
  return table;
}

}  // namespace kvrt

namespace kvrt {

void RopeTable::At(size_t position, size_t i, double* cos, double* sin) const {
  if (position < tabulated_) {
    *cos = cos_[position * pairs_ + i];
    *sin = sin_[position * pairs_ + i];
    return;
  }
  Angle(position, inverse_frequency_[i], freq_scale_, cos, sin);
}

void RopeTable::Fill(size_t position, double* cos, double* sin) const {
  for (size_t i = 0; i < pairs_; ++i) At(position, i, cos + i, sin + i);
}

}  // namespace kvrt
