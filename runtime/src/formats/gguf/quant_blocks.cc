#include "formats/gguf/quant_blocks.h"

#include <array>
#include <cstring>

#include "formats/gguf/tensor_types.h"

namespace kvrt::gguf {
namespace {

float Half(const uint8_t* p) { return HalfToFloat(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

uint32_t Load32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

// The sixteen values of a 4-bit IQ4 index (ggml's kvalues_iq4nl).
constexpr std::array<int8_t, 16> kIq4Values = {-127, -104, -83, -65, -49, -35, -22, -10,
                                               1,    13,   25,  38,  53,  69,  89,  113};

// Scale and minimum of sub-block j of a Q4_K/Q5_K super-block: eight 6-bit pairs
// packed into 12 bytes.
void ScaleMinK4(size_t j, const uint8_t* q, uint8_t& scale, uint8_t& min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

template <size_t kBytes, class Block>
void ForEachBlock(std::span<const uint8_t> bytes, std::span<float> out, size_t elements, Block block) {
  for (size_t b = 0; b < out.size() / elements; ++b) block(bytes.data() + b * kBytes, out.data() + b * elements);
}

}  // namespace

// Q8_0 {f16 d; int8 q[32]}: d·q.
void DequantizeQ8_0(std::span<const uint8_t> bytes, std::span<float> out) {
  ForEachBlock<34>(bytes, out, kLegacyBlock, [](const uint8_t* in, float* y) {
    const float d = Half(in);
    for (size_t j = 0; j < 32; ++j) y[j] = d * static_cast<float>(static_cast<int8_t>(in[2 + j]));
  });
}

// Q4_0 {f16 d; nibbles q[16]}: d·(q − 8), low nibbles first.
void DequantizeQ4_0(std::span<const uint8_t> bytes, std::span<float> out) {
  ForEachBlock<18>(bytes, out, kLegacyBlock, [](const uint8_t* in, float* y) {
    const float d = Half(in);
    for (size_t j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>((in[2 + j] & 0x0F) - 8);
      y[j + 16] = d * static_cast<float>((in[2 + j] >> 4) - 8);
    }
  });
}

// Q4_1 {f16 d; f16 m; nibbles q[16]}: q·d + m.
void DequantizeQ4_1(std::span<const uint8_t> bytes, std::span<float> out) {
  ForEachBlock<20>(bytes, out, kLegacyBlock, [](const uint8_t* in, float* y) {
    const float d = Half(in), m = Half(in + 2);
    for (size_t j = 0; j < 16; ++j) {
      y[j] = static_cast<float>(in[4 + j] & 0x0F) * d + m;
      y[j + 16] = static_cast<float>(in[4 + j] >> 4) * d + m;
    }
  });
}

// Q5_0 {f16 d; u32 qh; nibbles q[16]}: the fifth bit of value j in bit j of qh;
// d·(q − 16).
void DequantizeQ5_0(std::span<const uint8_t> bytes, std::span<float> out) {
  ForEachBlock<22>(bytes, out, kLegacyBlock, [](const uint8_t* in, float* y) {
    const float d = Half(in);
    const uint32_t qh = Load32(in + 2);
    for (size_t j = 0; j < 16; ++j) {
      const int low = (in[6 + j] & 0x0F) | static_cast<int>(((qh >> j) << 4) & 0x10);
      const int high = (in[6 + j] >> 4) | static_cast<int>((qh >> (j + 12)) & 0x10);
      y[j] = static_cast<float>(low - 16) * d;
      y[j + 16] = static_cast<float>(high - 16) * d;
    }
  });
}

// Q5_1 {f16 d; f16 m; u32 qh; nibbles q[16]}: q·d + m.
void DequantizeQ5_1(std::span<const uint8_t> bytes, std::span<float> out) {
  ForEachBlock<24>(bytes, out, kLegacyBlock, [](const uint8_t* in, float* y) {
    const float d = Half(in), m = Half(in + 2);
    const uint32_t qh = Load32(in + 4);
    for (size_t j = 0; j < 16; ++j) {
      const int low = (in[8 + j] & 0x0F) | static_cast<int>(((qh >> j) << 4) & 0x10);
      const int high = (in[8 + j] >> 4) | static_cast<int>((qh >> (j + 12)) & 0x10);
      y[j] = static_cast<float>(low) * d + m;
      y[j + 16] = static_cast<float>(high) * d + m;
    }
  });
}

// Q2_K {u8 scales[16]; u8 qs[64]; f16 d; f16 dmin}: sixteen sub-blocks of 16, each
// with a 4-bit scale and a 4-bit minimum; (d·scale)·q − dmin·min, q 2 bits.
void DequantizeQ2_K(std::span<const uint8_t> bytes, std::span<float> out) {
  ForEachBlock<84>(bytes, out, kSuperBlock, [](const uint8_t* in, float* y) {
    const uint8_t* scales = in;
    const uint8_t* q = in + 16;
    const float d = Half(in + 80), min = Half(in + 82);
    size_t is = 0;
    for (size_t half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (size_t part = 0; part < 2; ++part) {
          const uint8_t sc = scales[is++];
          const float dl = d * static_cast<float>(sc & 0xF), ml = min * static_cast<float>(sc >> 4);
          for (size_t l = 0; l < 16; ++l) *y++ = dl * static_cast<float>((q[l + 16 * part] >> shift) & 3) - ml;
        }
      }
    }
  });
}

// Q3_K {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}: sixteen 6-bit scales
// (biased by 32); q has 2 low bits in qs and, inverted, a third in hmask:
// (d·(scale − 32))·(q − 4 when the hmask bit is clear).
void DequantizeQ3_K(std::span<const uint8_t> bytes, std::span<float> out) {
  ForEachBlock<110>(bytes, out, kSuperBlock, [](const uint8_t* in, float* y) {
    const uint8_t* hmask = in;
    const uint8_t* q = in + 32;
    const uint8_t* packed = in + 96;
    const float d = Half(in + 108);
    int8_t scales[16];
    for (size_t i = 0; i < 16; ++i) {
      const int low = i < 8 ? (packed[i] & 0xF) : (packed[i - 8] >> 4);
      const int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
      scales[i] = static_cast<int8_t>((low | (high << 4)) - 32);
    }
    size_t is = 0;
    uint8_t m = 1;
    for (size_t half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, m = static_cast<uint8_t>(m << 1)) {
        for (size_t part = 0; part < 2; ++part) {
          const float dl = d * static_cast<float>(scales[is++]);
          const size_t o = 16 * part;
          for (size_t l = 0; l < 16; ++l) {
            const int value = ((q[l + o] >> shift) & 3) - ((hmask[l + o] & m) ? 0 : 4);
            *y++ = dl * static_cast<float>(value);
          }
        }
      }
    }
  });
}

// Q4_K {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}: eight sub-blocks of 32 with
// 6-bit scales and minimums; (d·scale)·q − dmin·min, q a nibble.
void DequantizeQ4_K(std::span<const uint8_t> bytes, std::span<float> out) {
  ForEachBlock<144>(bytes, out, kSuperBlock, [](const uint8_t* in, float* y) {
    const float d = Half(in), min = Half(in + 2);
    const uint8_t* scales = in + 4;
    const uint8_t* q = in + 16;
    for (size_t is = 0; is < 8; is += 2, q += 32) {
      uint8_t sc, m;
      ScaleMinK4(is, scales, sc, m);
      const float d1 = d * static_cast<float>(sc), m1 = min * static_cast<float>(m);
      ScaleMinK4(is + 1, scales, sc, m);
      const float d2 = d * static_cast<float>(sc), m2 = min * static_cast<float>(m);
      for (size_t l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
      for (size_t l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  });
}

// Q5_K {f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}: Q4_K with a fifth
// bit per value in qh.
void DequantizeQ5_K(std::span<const uint8_t> bytes, std::span<float> out) {
  ForEachBlock<176>(bytes, out, kSuperBlock, [](const uint8_t* in, float* y) {
    const float d = Half(in), min = Half(in + 2);
    const uint8_t* scales = in + 4;
    const uint8_t* qh = in + 16;
    const uint8_t* q = in + 48;
    uint8_t u1 = 1, u2 = 2;
    for (size_t is = 0; is < 8; is += 2, q += 32) {
      uint8_t sc, m;
      ScaleMinK4(is, scales, sc, m);
      const float d1 = d * static_cast<float>(sc), m1 = min * static_cast<float>(m);
      ScaleMinK4(is + 1, scales, sc, m);
      const float d2 = d * static_cast<float>(sc), m2 = min * static_cast<float>(m);
      for (size_t l = 0; l < 32; ++l) {
        *y++ = d1 * static_cast<float>((q[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - m1;
      }
      for (size_t l = 0; l < 32; ++l) {
        *y++ = d2 * static_cast<float>((q[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
      }
      u1 = static_cast<uint8_t>(u1 << 2);
      u2 = static_cast<uint8_t>(u2 << 2);
    }
  });
}

// Q6_K {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}: sixteen sub-blocks of 16
// with 8-bit scales; (d·scale)·(q − 32), q 4 low bits in ql and 2 in qh.
void DequantizeQ6_K(std::span<const uint8_t> bytes, std::span<float> out) {
  ForEachBlock<210>(bytes, out, kSuperBlock, [](const uint8_t* in, float* y) {
    const uint8_t* ql = in;
    const uint8_t* qh = in + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(in + 192);
    const float d = Half(in + 208);
    for (size_t half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
      for (size_t l = 0; l < 32; ++l) {
        const size_t is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  });
}

// IQ4_NL {f16 d; nibbles q[16]}: d·table[q], a non-linear 16-value table.
void DequantizeIq4_Nl(std::span<const uint8_t> bytes, std::span<float> out) {
  ForEachBlock<18>(bytes, out, kLegacyBlock, [](const uint8_t* in, float* y) {
    const float d = Half(in);
    for (size_t j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(kIq4Values[in[2 + j] & 0xF]);
      y[j + 16] = d * static_cast<float>(kIq4Values[in[2 + j] >> 4]);
    }
  });
}

// IQ4_XS {f16 d; u16 scales_h; u8 scales_l[4]; nibbles q[128]}: eight sub-blocks of
// 32 with 6-bit scales (biased by 32); (d·(scale − 32))·table[q].
void DequantizeIq4_Xs(std::span<const uint8_t> bytes, std::span<float> out) {
  ForEachBlock<136>(bytes, out, kSuperBlock, [](const uint8_t* in, float* y) {
    const float d = Half(in);
    const unsigned scales_h = static_cast<unsigned>(in[2] | (in[3] << 8));
    const uint8_t* scales_l = in + 4;
    const uint8_t* q = in + 8;
    for (size_t ib = 0; ib < 8; ++ib, y += 32, q += 16) {
      const int ls = static_cast<int>(((scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) |
                                      (((scales_h >> (2 * ib)) & 3) << 4));
      const float dl = d * static_cast<float>(ls - 32);
      for (size_t j = 0; j < 16; ++j) {
        y[j] = dl * static_cast<float>(kIq4Values[q[j] & 0xF]);
        y[j + 16] = dl * static_cast<float>(kIq4Values[q[j] >> 4]);
      }
    }
  });
}

}  // namespace kvrt::gguf
