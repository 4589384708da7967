// ggml's non-linear 4-bit quantizers (quantize_row_iq4_nl_impl of ggml-quants.c, as
// quantize_iq4_nl and quantize_iq4_xs run it for llama-quantize: ntry 7, no importance matrix),
// written from the published algorithm: the same float operations in the same order, so the same
// bits as the file llama-quantize writes (compressed_matrix.h).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "compressed_layout.h"
#include "kvrt/simd/compressed_matrix.h"

namespace kvrt::simd {
namespace {

using compressed::kIQ4NLValues;

// ggml's GROUP_MAX_EPS: a block whose largest |x| is below it counts as all zero.
constexpr float kGroupMaxEps = 1e-15f;
// ggml's trial count of quantize_iq4_nl / quantize_iq4_xs.
constexpr int kTrials = 7;
constexpr int kLevels = 16;

float Level(int index) { return static_cast<float>(kIQ4NLValues[index]); }

// ggml's best_index_int8: the index of the table value nearest to x, a tie going to
// the larger value. ggml bisects; the bisection ends on the pair low, low + 1 with
// Level(low) ≤ x < Level(low + 1), and since the levels increase, low is the count of
// inner levels at or below x, counted here without the bisection's branches.
// A NaN fails every comparison of the bisection, which then ends on the last pair.
uint8_t BestIndex(float x) {
  if (x <= Level(0)) return 0;
  if (!(x < Level(kLevels - 1))) return static_cast<uint8_t>(kLevels - 1);
  int low = 0;
  for (int i = 1; i < kLevels - 1; ++i) low += x >= Level(i) ? 1 : 0;
  return static_cast<uint8_t>(x - Level(low) < Level(low + 1) - x ? low : low + 1);
}

// Level(BestIndex(x)) as selects only: the largest level at or below x (the first when
// none is) and the smallest above it (the last when none is), the nearer taken, a tie
// to the larger; a NaN keeps both defaults and takes the last, as BestIndex does.
inline float NearestLevel(float x) {
  float below = Level(0), above = Level(kLevels - 1);
  for (int i = 1; i < kLevels - 1; ++i) below = x >= Level(i) ? Level(i) : below;
  for (int i = kLevels - 2; i >= 1; --i) above = x < Level(i) ? Level(i) : above;
  return x - below < above - x ? below : above;
}

// The scale of one block of 32 (ggml's scales[ib]): 0 for an all-but-zero block, else
// the least-squares scale of the indices against m/127 (m the first element of largest
// |x|, sign kept), replaced by that of a trial scale (t − 127)/m whenever it fits
// better.
float BlockScale(const float* x) {
  float weight[kQuantBlock];
  for (size_t j = 0; j < kQuantBlock; ++j) weight[j] = x[j] * x[j];
  float amax = 0.0f, max = 0.0f;
  for (size_t j = 0; j < kQuantBlock; ++j) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      max = x[j];
    }
  }
  if (amax < kGroupMaxEps) return 0.0f;
  // Σ w·q·x and Σ w·q² of the levels nearest x·id, in ggml's order and association
  // ((w·q)·x, (w·q)·q), for 16 inverse scales side by side: ggml's first, 1/d with
  // d = max/−127, then its 15 trials (t − 127)/max. Each one's sums are independent of
  // the others', which lets the compiler keep the 16 in vectors (a block's trial loop
  // was most of a conversion).
  constexpr int kScales = 2 * kTrials + 2;
  float id[kScales], sumqx[kScales] = {}, sumq2[kScales] = {};
  id[0] = 1.0f / (-max / Level(0));
  for (int t = 1; t < kScales; ++t) id[t] = static_cast<float>(t - 1 - kTrials + kIQ4NLValues[0]) / max;
  for (size_t j = 0; j < kQuantBlock; ++j) {
    const float xj = x[j], wj = weight[j];
    for (int t = 0; t < kScales; ++t) {
      const float q = NearestLevel(id[t] * xj);
      sumqx[t] += wj * q * xj;
      sumq2[t] += wj * q * q;
    }
  }
  float d = sumqx[0] / sumq2[0];
  float best = d * sumqx[0];
  for (int t = 1; t < kScales; ++t) {
    if (sumq2[t] > 0.0f && sumqx[t] * sumqx[t] > best * sumq2[t]) {
      d = sumqx[t] / sumq2[t];
      best = d * sumqx[t];
    }
  }
  return d;
}

// ggml's nibble packing of 32 indices: byte j holds index j low, index j + 16 high.
void PackNibbles(const uint8_t* indices, uint8_t* qs) {
  constexpr size_t kHalf = kQuantBlock / 2;
  for (size_t j = 0; j < kHalf; ++j) {
    qs[j] = static_cast<uint8_t>(indices[j] | indices[kHalf + j] << 4);
  }
}

// ggml's nearest_int: round to nearest (ties to even) by adding 1.5·2^23.
int NearestInt(float value) {
  const float shifted = value + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  return (bits & 0x007fffff) - 0x00400000;
}

}  // namespace

void QuantizeBlockIQ4_NL(const float* x, uint8_t* out) {
  // One block is its own super-block: d is the block's scale as f16, and the indices
  // are taken against its f32 inverse (all 8, the table's nearest to 0, when d = 0).
  const float d = BlockScale(x);
  compressed::StoreU16(out, F32ToF16(d));
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  uint8_t indices[kQuantBlock];
  for (size_t j = 0; j < kQuantBlock; ++j) indices[j] = BestIndex(id * x[j]);
  PackNibbles(indices, out + 2);
}

void QuantizeBlockIQ4_XS(const float* x, uint8_t* out) {
  // Each block's own scale, then one f16 d for the super-block: the block scale of
  // largest magnitude (first, sign kept) maps to ls − 32 = −32.
  constexpr size_t kBlocks = kSuperBlock / kQuantBlock;
  float scales[kBlocks];
  float max_scale = 0.0f, amax_scale = 0.0f;
  for (size_t ib = 0; ib < kBlocks; ++ib) {
    scales[ib] = BlockScale(x + ib * kQuantBlock);
    const float abs_d = std::fabs(scales[ib]);
    if (abs_d > amax_scale) {
      amax_scale = abs_d;
      max_scale = scales[ib];
    }
  }
  const float d = -max_scale / 32.0f;
  compressed::StoreU16(out, F32ToF16(d));
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  uint16_t scales_h = 0;
  uint8_t* scales_l = out + 4;
  uint8_t* qs = out + 8;
  for (size_t ib = 0; ib < kBlocks; ++ib) {
    int l = NearestInt(id * scales[ib]);
    l = l < -32 ? -32 : l > 31 ? 31 : l;
    const float dl = d * static_cast<float>(l);
    const float idl = dl != 0.0f ? 1.0f / dl : 0.0f;
    const float* xb = x + ib * kQuantBlock;
    uint8_t indices[kQuantBlock];
    for (size_t j = 0; j < kQuantBlock; ++j) indices[j] = BestIndex(idl * xb[j]);
    PackNibbles(indices, qs + ib * kQuantBlock / 2);
    const auto ls = static_cast<unsigned>(l + 32);
    if (ib % 2 == 0) {
      scales_l[ib / 2] = static_cast<uint8_t>(ls & 0xF);
    } else {
      scales_l[ib / 2] = static_cast<uint8_t>(scales_l[ib / 2] | (ls & 0xF) << 4);
    }
    scales_h = static_cast<uint16_t>(scales_h | (ls >> 4) << (2 * ib));
  }
  compressed::StoreU16(out + 2, scales_h);
}

}  // namespace kvrt::simd
