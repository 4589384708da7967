// ggml's reference block quantizers (compressed_matrix.h), written from the published
// algorithm: the same float operations in the same order, so the same bits.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "compressed_layout.h"
#include "kvrt/simd/compressed_matrix.h"

namespace kvrt::simd {

void QuantizeBlockQ8_0(const float* x, uint8_t* out) {
  float amax = 0.0f;
  for (size_t j = 0; j < kQuantBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  compressed::StoreU16(out, F32ToF16(d));
  for (size_t j = 0; j < kQuantBlock; ++j) {
    out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[j] * id)));
  }
}

void QuantizeBlockQ4_0(const float* x, uint8_t* out) {
  // The first element of largest magnitude, with its sign: it maps to q = 0 (−8·d).
  float amax = 0.0f, max = 0.0f;
  for (size_t j = 0; j < kQuantBlock; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  compressed::StoreU16(out, F32ToF16(d));
  const auto quant = [id](float v) {
    // x·id + 8.5 lies in [0.5, 16.5] for finite input: truncation is floor, then
    // clamp; anything else (a non-finite block) is clamped instead of cast.
    const float shifted = v * id + 8.5f;
    if (!(shifted >= 0.0f)) return uint8_t{0};
    return static_cast<uint8_t>(shifted >= 15.0f ? 15 : static_cast<int>(shifted));
  };
  constexpr size_t kHalf = kQuantBlock / 2;
  for (size_t j = 0; j < kHalf; ++j) {
    out[2 + j] = static_cast<uint8_t>(quant(x[j]) | (quant(x[kHalf + j]) << 4));
  }
}

void QuantizeBlockQ5_0(const float* x, uint8_t* out) {
  // q4_0's search and rounding with 32 levels: the first element of largest magnitude
  // maps to q = 0 (−16·d).
  float amax = 0.0f, max = 0.0f;
  for (size_t j = 0; j < kQuantBlock; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -16.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  compressed::StoreU16(out, F32ToF16(d));
  const auto quant = [id](float v) {
    // x·id + 16.5 lies in [0.5, 32.5] for finite input: truncation is floor, then
    // clamp; anything else (a non-finite block) is clamped instead of cast.
    const float shifted = v * id + 16.5f;
    if (!(shifted >= 0.0f)) return uint32_t{0};
    return static_cast<uint32_t>(shifted >= 31.0f ? 31 : static_cast<int>(shifted));
  };
  constexpr size_t kHalf = kQuantBlock / 2;
  uint32_t high = 0;
  for (size_t j = 0; j < kHalf; ++j) {
    const uint32_t q0 = quant(x[j]), q1 = quant(x[kHalf + j]);
    out[6 + j] = static_cast<uint8_t>((q0 & 0xF) | (q1 & 0xF) << 4);
    high |= (q0 >> 4) << j;
    high |= (q1 >> 4) << (kHalf + j);
  }
  // qh: the fifth bits as a little-endian uint32, element j at bit j.
  for (size_t b = 0; b < 4; ++b) out[2 + b] = static_cast<uint8_t>(high >> (8 * b));
}

namespace {

// quantize_row_q4_1_ref / _q5_1_ref on one block: the range [min, max] split into
// kLevels − 1 steps of d, min stored as m, q = (x − min)·id rounded half up by
// truncation. Writes d and m, and q to q[0..32).
void QuantizeMinBlock(const float* x, int levels, uint8_t* out, uint32_t* q) {
  float min = std::numeric_limits<float>::max();
  float max = -std::numeric_limits<float>::max();
  for (size_t j = 0; j < kQuantBlock; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  const float d = (max - min) / static_cast<float>(levels - 1);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  compressed::StoreU16(out, F32ToF16(d));
  compressed::StoreU16(out + 2, F32ToF16(min));
  for (size_t j = 0; j < kQuantBlock; ++j) {
    // (x − min)·id + 0.5 lies in [0.5, levels − 0.5 + a rounding] for finite input:
    // truncation is floor, then ggml's clamp to the top level; anything else (a
    // non-finite block) is clamped instead of cast.
    const float shifted = (x[j] - min) * id + 0.5f;
    if (!(shifted >= 0.0f)) {
      q[j] = 0;
      continue;
    }
    q[j] = shifted >= static_cast<float>(levels - 1) ? static_cast<uint32_t>(levels - 1)
                                                     : static_cast<uint32_t>(static_cast<int>(shifted));
  }
}

}  // namespace

void QuantizeBlockQ4_1(const float* x, uint8_t* out) {
  uint32_t q[kQuantBlock];
  QuantizeMinBlock(x, 16, out, q);
  constexpr size_t kHalf = kQuantBlock / 2;
  for (size_t j = 0; j < kHalf; ++j) out[4 + j] = static_cast<uint8_t>(q[j] | q[kHalf + j] << 4);
}

void QuantizeBlockQ5_1(const float* x, uint8_t* out) {
  uint32_t q[kQuantBlock];
  QuantizeMinBlock(x, 32, out, q);
  constexpr size_t kHalf = kQuantBlock / 2;
  uint32_t high = 0;
  for (size_t j = 0; j < kHalf; ++j) {
    out[8 + j] = static_cast<uint8_t>((q[j] & 0xF) | (q[kHalf + j] & 0xF) << 4);
    high |= (q[j] >> 4) << j;
    high |= (q[kHalf + j] >> 4) << (kHalf + j);
  }
  // qh: the fifth bits as a little-endian uint32, element j at bit j.
  for (size_t b = 0; b < 4; ++b) out[4 + b] = static_cast<uint8_t>(high >> (8 * b));
}

}  // namespace kvrt::simd
