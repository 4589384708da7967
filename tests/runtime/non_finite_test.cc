// FirstNonFinite (engine/step_errors.h), which both engines use to name the first
// non-finite activation, score or logit of a step: the first infinity or NaN of
// any kind at every position around its block boundaries, and none for every
// finite value, the extremes included.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/step_errors.h"

namespace kvrt::detail {
namespace {

template <class T>
std::vector<T> NonFiniteValues() {
  using Limits = std::numeric_limits<T>;
  std::vector<T> values = {Limits::infinity(), -Limits::infinity(), Limits::quiet_NaN(),
                           -Limits::quiet_NaN(), Limits::signaling_NaN()};
  // A NaN with only the lowest payload bit set, and one with every bit set.
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  const Bits exponent = sizeof(T) == 4 ? static_cast<Bits>(0x7F800000u) : static_cast<Bits>(0x7FF0000000000000u);
  for (const Bits bits : {Bits(exponent | 1), static_cast<Bits>(~Bits{0})}) {
    T value;
    std::memcpy(&value, &bits, sizeof value);
    values.push_back(value);
  }
  return values;
}

template <class T>
std::vector<T> FiniteExtremes() {
  using Limits = std::numeric_limits<T>;
  return {T(0), -T(0), Limits::max(), Limits::lowest(), Limits::min(), Limits::denorm_min(),
          -Limits::denorm_min(), T(1)};
}

template <class T>
void ExpectFirstNonFiniteFound() {
  for (size_t n : {size_t{1}, size_t{255}, size_t{256}, size_t{257}, size_t{1000}}) {
    std::vector<T> row(n);
    const std::vector<T> finite = FiniteExtremes<T>();
    for (size_t i = 0; i < n; ++i) row[i] = finite[i % finite.size()];
    EXPECT_FALSE(FirstNonFinite(row.data(), n).has_value()) << "n=" << n;
    for (size_t at : {size_t{0}, size_t{1}, size_t{255}, size_t{256}, size_t{511}, size_t{512}, n - 1}) {
      if (at >= n) continue;
      for (const T bad : NonFiniteValues<T>()) {
        std::vector<T> copy = row;
        copy[at] = bad;
        if (at + 3 < n) copy[at + 3] = bad;  // a later one is not the first
        const std::optional<size_t> found = FirstNonFinite(copy.data(), n);
        ASSERT_TRUE(found.has_value()) << "n=" << n << " at=" << at;
        EXPECT_EQ(*found, at) << "n=" << n;
      }
    }
  }
  EXPECT_FALSE(FirstNonFinite(static_cast<const T*>(nullptr), 0).has_value());
}

TEST(FirstNonFiniteTest, FindsTheFirstInfinityOrNanOfFloats) { ExpectFirstNonFiniteFound<float>(); }
TEST(FirstNonFiniteTest, FindsTheFirstInfinityOrNanOfDoubles) { ExpectFirstNonFiniteFound<double>(); }

}  // namespace
}  // namespace kvrt::detail
