// ggml's q2_k, q3_k, q4_k, q5_k and q6_k blocks read back as ggml's dequantize_row_q2_K / _q3_K /
// _q4_K / _q5_K / _q6_K read them, written apart from the kernels' panel layout so that the simd tests check that
// layout (at(), the kernels) against ggml's own bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kvrt/simd/compressed_matrix.h"

namespace kvrt::simd_test {

// Element k of a ggml row: its quant as the kernels multiply it (q2_k, q4_k and q5_k q, q6_k
// q − 32, q3_k q − 4), the scale d·sc of its sub-block and (q2_k, q4_k, q5_k) the minimum dmin·m; the
// value ggml dequantizes to is scale·q − min (q2_k, q4_k, q5_k) or scale·q (q6_k, q3_k).
struct KQuantElement {
  int q;
  float scale;
  float min;
};

inline uint16_t LoadHalf(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

// ggml's kvalues_iq4nl (ggml-common.h), written out apart from the library's copy.
inline constexpr int kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                         1,    13,   25,  38,  53,  69,  89,  113};

inline KQuantElement DecodeKQuant(simd::CompressedFormat type, const uint8_t* row, size_t k) {
  const size_t e = k % 256;
  if (type == simd::CompressedFormat::kIQ4_XS) {
    // ggml's dequantize_row_iq4_xs: block {f16 d; u16 scales_h; u8 scales_l[4]; u8
    // qs[128]}, sub-block ib's ls from 4 bits of scales_l and 2 of scales_h, dl = d·(ls −
    // 32), value dl·kvalues_iq4nl[nibble] (the "quant" here is the table value).
    const uint8_t* block = row + 136 * (k / 256);
    const size_t ib = e / 32, j = e % 32;
    const unsigned scales_h = LoadHalf(block + 2);
    const int ls = ((block[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) | (((scales_h >> (2 * ib)) & 3) << 4);
    const uint8_t qs = block[8 + 16 * ib + j % 16];
    const int index = j < 16 ? qs & 0xF : qs >> 4;
    return {kIQ4NLValues[index], simd::F16ToF32(LoadHalf(block)) * static_cast<float>(ls - 32), 0.0f};
  }
  if (type == simd::CompressedFormat::kQ4_K || type == simd::CompressedFormat::kQ5_K) {
    const bool q5 = type == simd::CompressedFormat::kQ5_K;
    const uint8_t* block = row + (q5 ? 176 : 144) * (k / 256);
    const uint8_t* packed = block + 4;
    const size_t j = e / 32;
    const int sc = j < 4 ? packed[j] & 63 : (packed[j + 4] & 0xF) | ((packed[j - 4] >> 6) << 4);
    const int m = j < 4 ? packed[j + 4] & 63 : (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
    // q5_k: qh[32] before the nibbles; element e's fifth bit is bit e / 32 of qh[e % 32]
    // (ggml's masks u1 = 1, 4, 16, 64 and u2 = 2·u1 for the four chunks of 64).
    const uint8_t qs = block[(q5 ? 48 : 16) + e / 64 * 32 + e % 32];
    int q = e % 64 < 32 ? qs & 0xF : qs >> 4;
    if (q5 && (block[16 + e % 32] >> (e / 32) & 1) != 0) q += 16;
    return {q, simd::F16ToF32(LoadHalf(block)) * static_cast<float>(sc),
            simd::F16ToF32(LoadHalf(block + 2)) * static_cast<float>(m)};
  }
  if (type == simd::CompressedFormat::kQ2_K) {
    // {scales[16], qs[64], f16 d, f16 dmin}, walked as dequantize_row_q2_K walks it: per
    // 128 elements q advances 32 bytes; for shift 0, 2, 4, 6 two runs of 16 elements,
    // from q[l] and q[l + 16], each with the next scale byte (dl = d·(sc & 15), ml =
    // dmin·(sc >> 4)).
    const uint8_t* block = row + 84 * (k / 256);
    const size_t chunk = e / 128, run = e % 128 / 16, l = e % 16;
    const size_t shift = 2 * (run / 2);
    const uint8_t* q = block + 16 + 32 * chunk + (run % 2 == 1 ? 16 : 0);
    const uint8_t sc = block[8 * chunk + run];
    return {(q[l] >> shift) & 3, simd::F16ToF32(LoadHalf(block + 80)) * static_cast<float>(sc & 0xF),
            simd::F16ToF32(LoadHalf(block + 82)) * static_cast<float>(sc >> 4)};
  }
  if (type == simd::CompressedFormat::kQ3_K) {
    // {hmask[32], qs[64], scales[12], f16 d}: as dequantize_row_q3_K unpacks them
    // (its kmask1/kmask2 shuffle of the 12 scale bytes into 16 int8 − 32).
    const uint8_t* block = row + 110 * (k / 256);
    const uint8_t* packed = block + 96;
    uint32_t aux[4];
    std::memcpy(aux, packed, 12);
    const uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & 0x0f0f0f0f) | (((tmp >> 4) & 0x03030303) << 4);
    aux[3] = ((aux[1] >> 4) & 0x0f0f0f0f) | (((tmp >> 6) & 0x03030303) << 4);
    aux[0] = (aux[0] & 0x0f0f0f0f) | (((tmp >> 0) & 0x03030303) << 4);
    aux[1] = (aux[1] & 0x0f0f0f0f) | (((tmp >> 2) & 0x03030303) << 4);
    int8_t scales[16];
    std::memcpy(scales, aux, 16);
    const size_t chunk = e / 128, shift = e % 128 / 32, l = e % 32;
    const int low = (block[32 + 32 * chunk + l] >> (2 * shift)) & 3;
    const bool high = (block[l] >> (4 * chunk + shift) & 1) != 0;
    return {low - (high ? 0 : 4),
            simd::F16ToF32(LoadHalf(block + 108)) * static_cast<float>(scales[e / 16] - 32), 0.0f};
  }
  const uint8_t* block = row + 210 * (k / 256);
  const size_t half = e / 128, quarter = e % 128 / 32, l = e % 32;
  const uint8_t ql = block[64 * half + l + (quarter % 2 == 1 ? 32 : 0)];
  const int low = quarter < 2 ? ql & 0xF : ql >> 4;
  const int high = (block[128 + 32 * half + l] >> (2 * quarter)) & 3;
  const auto sc = static_cast<int8_t>(block[192 + e / 16]);
  return {(low | high << 4) - 32, simd::F16ToF32(LoadHalf(block + 208)) * static_cast<float>(sc), 0.0f};
}

}  // namespace kvrt::simd_test
