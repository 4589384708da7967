#include "kvrt/rope.h"

#include <cmath>
#include <string>

namespace kvrt {

Result<RopeTable> RopeTable::Create(size_t head_width, size_t positions, double base) {
  const size_t pairs = head_width / 2;
  if (pairs != 0 && positions > kMaxEntries / pairs) {
    return Fail(ErrorCode::kSizeOverflow, {{"context", std::string("rope table")}},
                "RoPE table of " + std::to_string(positions) + " positions x " +
                    std::to_string(pairs) + " pairs exceeds the supported maximum of " +
                    std::to_string(kMaxEntries) + " entries");
  }
  RopeTable table;
  table.pairs_ = pairs;
  table.positions_ = positions;
  table.base_ = base;
  auto inverse = Buffer<double>::Allocate(pairs);
  auto cos = Buffer<double>::Allocate(positions * pairs);
  auto sin = Buffer<double>::Allocate(positions * pairs);
  if (!inverse || !cos || !sin) {
    return Fail(ErrorCode::kAllocationFailed, {{"elements", uint64_t{2 * positions * pairs}}},
                "could not allocate the RoPE tables");
  }
  for (size_t i = 0; i < pairs; ++i) {
    // Multiply first (exact), then one rounded division; libm pow, not exp(e·log b).
    const double exponent = (-2.0 * static_cast<double>(i)) / static_cast<double>(head_width);
    (*inverse)[i] = std::pow(base, exponent);
    if (!std::isfinite((*inverse)[i])) {
      return Fail(ErrorCode::kNonFiniteTableValue,
                  {{"position", uint64_t{0}}, {"pair", uint64_t{i}}},
                  "RoPE inverse frequency " + std::to_string(i) + " is not finite");
    }
  }
  for (size_t p = 0; p < positions; ++p) {
    for (size_t i = 0; i < pairs; ++i) {
      const double angle = static_cast<double>(p) * (*inverse)[i];
      double c = std::cos(angle);
      double s = std::sin(angle);
      if (!std::isfinite(angle) || !std::isfinite(c) || !std::isfinite(s)) {
        return Fail(ErrorCode::kNonFiniteTableValue,
                    {{"position", uint64_t{p}}, {"pair", uint64_t{i}}},
                    "RoPE angle for position " + std::to_string(p) + " pair " + std::to_string(i) +
                        " is not finite");
      }
      (*cos)[p * pairs + i] = c == 0.0 ? 0.0 : c;  // store ±0 as +0
      (*sin)[p * pairs + i] = s == 0.0 ? 0.0 : s;
    }
  }
  table.inverse_frequency_ = std::move(*inverse);
  table.cos_ = std::move(*cos);
  table.sin_ = std::move(*sin);
  return table;
}

}  // namespace kvrt
