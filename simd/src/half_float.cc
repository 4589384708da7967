// Half-precision conversions (compressed_matrix.h), in plain integer arithmetic so that
// they give the same bits on every target and need no F16C at compile time.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kvrt/simd/compressed_matrix.h"

namespace kvrt::simd {
namespace {

uint32_t BitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}
float FloatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// Shifts `significand` right by `shift` (1..31), rounding to nearest, ties to even.
uint32_t ShiftRightRoundEven(uint32_t significand, unsigned shift) {
  const uint32_t kept = significand >> shift;
  const uint32_t rest = significand & ((uint32_t{1} << shift) - 1);
  const uint32_t half = uint32_t{1} << (shift - 1);
  return kept + ((rest > half || (rest == half && (kept & 1))) ? 1 : 0);
}

}  // namespace

uint16_t F32ToF16(float value) {
  const uint32_t bits = BitsOf(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t magnitude = bits & 0x7FFFFFFF;
  if (magnitude > 0x7F800000) {  // NaN: quiet, top payload bits kept
    return static_cast<uint16_t>(sign | 0x7E00 | ((magnitude >> 13) & 0x3FF));
  }
  const int exponent = static_cast<int>(magnitude >> 23) - 127;
  if (exponent >= 16) return static_cast<uint16_t>(sign | 0x7C00);  // ±inf, or overflow
  if (exponent >= -14) {
    // Normal f16: rebias the exponent and round 23 to 10 significand bits. A carry out
    // of the significand correctly bumps the exponent (up to 0x7C00 = inf).
    const uint32_t biased = (static_cast<uint32_t>(exponent + 15) << 23) | (magnitude & 0x7FFFFF);
    return static_cast<uint16_t>(sign | ShiftRightRoundEven(biased, 13));
  }
  if (exponent < -25) return sign;  // below half the smallest subnormal: ±0
  // Subnormal f16 (units of 2^−24): the 24-bit significand times 2^(exponent + 1).
  const uint32_t significand = (magnitude & 0x7FFFFF) | 0x800000;
  return static_cast<uint16_t>(sign | ShiftRightRoundEven(significand, static_cast<unsigned>(-exponent - 1)));
}

float F16ToF32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1F;
  const uint32_t mantissa = bits & 0x3FF;
  if (exponent == 0x1F) return FloatOf(sign | 0x7F800000 | (mantissa << 13));
  if (exponent != 0) return FloatOf(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // ±0 or subnormal: mantissa · 2^−24, exact in f32.
  const float magnitude = static_cast<float>(mantissa) * FloatOf(0x33800000);  // 2^−24
  return sign != 0 ? -magnitude : magnitude;
}

uint16_t F32ToBf16(float value) {
  const uint32_t bits = BitsOf(value);
  if ((bits & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((bits >> 16) | 64);
  return static_cast<uint16_t>((bits + (0x7FFF + ((bits >> 16) & 1))) >> 16);
}

float Bf16ToF32(uint16_t bits) { return FloatOf(static_cast<uint32_t>(bits) << 16); }

// f16 keeps 11 significant bits down to 2^−14 and a fixed step of 2^−24 below:
// the value over its step, rounded to an integer (nearbyint: ties to even in the
// default rounding mode), times the step. Both scalings are by powers of two, so
// the one rounding is nearbyint's.
double RoundToF16(double value) {
  if (!std::isfinite(value)) return value;
  const double magnitude = std::fabs(value);
  int exponent = 0;
  std::frexp(magnitude, &exponent);  // magnitude in [2^(exponent−1), 2^exponent)
  const double step = std::ldexp(1.0, std::max(exponent - 11, -24));
  const double rounded = std::nearbyint(magnitude / step) * step;
  constexpr double kLargest = 65504.0;
  return std::copysign(rounded > kLargest ? HUGE_VAL : rounded, value);
}

// bf16 keeps 8 significant bits down to 2^−126 and a fixed step of 2^−133 below
// (f32's exponent range), rounded as RoundToF16 does.
double RoundToBf16(double value) {
  if (!std::isfinite(value)) return value;
  const double magnitude = std::fabs(value);
  int exponent = 0;
  std::frexp(magnitude, &exponent);
  const double step = std::ldexp(1.0, std::max(exponent - 8, -133));
  const double rounded = std::nearbyint(magnitude / step) * step;
  const double largest = std::ldexp(255.0, 120);  // 0x7F7F: (2 − 2^−7)·2^127
  return std::copysign(rounded > largest ? HUGE_VAL : rounded, value);
}

}  // namespace kvrt::simd
