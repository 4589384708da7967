// ggml's reference K-quant quantizers (compressed_matrix.h: QuantizeBlockQ2_K/Q3_K/Q4_K/Q5_K/Q6_K),
// written from the published algorithm: the same float operations in the same order,
// unfused (ggml builds them into ggml-base without -march flags, so without FMA), so
// that the bytes equal llama-quantize's. The searches look odd in places (a scale
// refit that can lose to the first guess, a block whose scale is 0 keeping the
// search's quants); they are kept exactly, because any change moves quants.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "compressed_layout.h"
#include "kvrt/simd/compressed_matrix.h"

namespace kvrt::simd {
namespace {

// ggml's GROUP_MAX_EPS: a group whose largest |x| is below it is all zero.
constexpr float kGroupMaxEps = 1e-15f;

// Round to nearest, ties to even, by adding 1.5·2^23 (ggml's nearest_int; |value| is
// below 2^22 wherever the quantizers call it with finite input).
int NearestInt(float value) {
  const float shifted = value + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  return (bits & 0x007FFFFF) - 0x00400000;
}

int Clamp(int value, int low, int high) { return value < low ? low : (value > high ? high : value); }

// ggml's make_qkx2_quants: levels L[i] in [0, nmax] and a scale and minimum (returned
// as −min ≥ 0 in `negative_min`) for x ≈ scale·L + min with min ≤ 0, chosen by a
// weighted least-squares refit over nstep + 1 trial inverse scales, the fits compared
// by their weighted squared errors, or (use_mad, q2_k's) absolute errors.
float FitScaleAndMin(int n, int nmax, const float* x, const float* weights, uint8_t* levels,
                     float* negative_min, uint8_t* trial, float rmin, float rdelta, int nstep,
                     bool use_mad) {
  float min = x[0];
  float max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) levels[i] = 0;
    *negative_min = -min;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = NearestInt(iscale * (x[i] - min));
    levels[i] = static_cast<uint8_t>(Clamp(l, 0, nmax));
    float diff = scale * static_cast<float>(levels[i]) + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += weights[i] * diff;
  }
  if (nstep < 1) {
    *negative_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = Clamp(NearestInt(iscale * (x[i] - min)), 0, nmax);
      trial[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      const auto level = static_cast<float>(l);
      sum_l += w * level;
      sum_l2 += w * level * level;
      sum_xl += w * level * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * static_cast<float>(trial[i]) + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        error += weights[i] * diff;
      }
      if (error < best_error) {
        for (int i = 0; i < n; ++i) levels[i] = trial[i];
        best_error = error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *negative_min = -min;
  return scale;
}

// The first of x[0..n) with the largest magnitude, sign kept (0 for an all-zero group):
// the value ggml's make_qx_quants and make_q3_quants scale their levels from.
float LargestMagnitude(int n, const float* x) {
  float max = 0;
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  return max;
}

// ggml's make_qx_quants with rmse_type 1 and no importance weights: signed levels in
// [−nmax, nmax − 1], stored + nmax in L, and a scale refit by least squares weighted by
// x², over 18 trial inverse scales around −nmax/max.
float FitSignedScale(int n, int nmax, const float* x, int8_t* levels) {
  const float max = LargestMagnitude(n, x);
  if (std::fabs(max) < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) levels[i] = 0;
    return 0.0f;
  }
  const auto level_of = [nmax](float scaled) { return Clamp(NearestInt(scaled), -nmax, nmax - 1); };
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = level_of(iscale * x[i]);
    levels[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = level_of(iscale * x[i]);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * static_cast<float>(l);
      suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) levels[i] = static_cast<int8_t>(nmax + level_of(iscale * x[i]));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// ggml's make_q3_quants with do_rmse: signed levels in [−nmax, nmax − 1] from
// −nmax/max, then up to 5 passes that move single levels to where the least-squares
// scale (weights x²) puts them, kept when they raise sumlx²/suml2; levels stored + nmax
// in L, except for an all-zero group (0, and scale 0).
float FitQ3Scale(int n, int nmax, const float* x, int8_t* levels) {
  const float max = LargestMagnitude(n, x);
  if (std::fabs(max) < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) levels[i] = 0;
    return 0.0f;
  }
  const float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = Clamp(NearestInt(iscale * x[i]), -nmax, nmax - 1);
    levels[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int itry = 0; itry < 5; ++itry) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const auto old_level = static_cast<float>(levels[i]);
      float slx = sumlx - w * x[i] * old_level;
      if (slx > 0) {
        float sl2 = suml2 - w * old_level * old_level;
        const int new_l = Clamp(NearestInt(x[i] * sl2 / slx), -nmax, nmax - 1);
        if (new_l != levels[i]) {
          const auto level = static_cast<float>(new_l);
          slx += w * x[i] * level;
          sl2 += w * level * level;
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            levels[i] = static_cast<int8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++changed;
          }
        }
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) levels[i] = static_cast<int8_t>(levels[i] + nmax);
  return sumlx / suml2;
}

// The scale and minimum of sub-block j from ggml's 12-byte q4_k packing
// (get_scale_min_k4).
void ScaleMinK4(size_t j, const uint8_t* packed, uint8_t& scale, uint8_t& min) {
  if (j < 4) {
    scale = packed[j] & 63;
    min = packed[j + 4] & 63;
  } else {
    scale = static_cast<uint8_t>((packed[j + 4] & 0xF) | ((packed[j - 4] >> 6) << 4));
    min = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
  }
}

// The largest scale and largest (negated) minimum of a super-block's sub-blocks.
struct SubBlockFits {
  float max_scale = 0;  // the minimum is subtracted, so scales are never negative
  float max_min = 0;
};

// FitScaleAndMin on each of kSubs sub-blocks of kSub values of x, weighted by what
// `weigh(xs, weights)` gives each: its levels, scales[j] and mins[j] (ggml's loop of
// quantize_row_q2_K_ref, _q4_K_ref and _q5_K_ref).
template <int kSub, int kSubs, class Weigh>
SubBlockFits FitSubBlocks(const float* x, int nmax, float rmin, float rdelta, int nstep, bool use_mad,
                          const Weigh& weigh, uint8_t* levels, float* scales, float* mins) {
  uint8_t trial[kSub];
  float weights[kSub];
  SubBlockFits fits;
  for (int j = 0; j < kSubs; ++j) {
    const float* xs = x + kSub * j;
    weigh(xs, weights);
    scales[j] = FitScaleAndMin(kSub, nmax, xs, weights, levels + kSub * j, &mins[j], trial, rmin,
                               rdelta, nstep, use_mad);
    if (scales[j] > fits.max_scale) fits.max_scale = scales[j];
    if (mins[j] > fits.max_min) fits.max_min = mins[j];
  }
  return fits;
}

// What quantize_row_q4_K_ref and _q5_K_ref share: per 32 values a scale and a minimum
// from ggml's search with `nmax` levels (and its trial scales rmin + rdelta·is, is =
// 0..nstep), quantized to 6 bits against the largest of each into d, dmin and the
// 12-byte get_scale_min_k4 packing (the first 16 bytes of `out`), then the levels
// (0..nmax) refit to the stored scales, into levels[256].
void ScaleMinSuperBlock(const float* x, int nmax, float rmin, float rdelta, int nstep, uint8_t* out,
                        uint8_t* levels) {
  constexpr int kSub = 32, kSubs = kSuperBlock / kSub;
  float mins[kSubs];
  float scales[kSubs];
  // Weights √(mean x²) + |x|.
  const auto weigh = [](const float* xs, float* weights) {
    float sum_x2 = 0;
    for (int l = 0; l < kSub; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / kSub);
    for (int l = 0; l < kSub; ++l) weights[l] = av_x + std::fabs(xs[l]);
  };
  const SubBlockFits fits =
      FitSubBlocks<kSub, kSubs>(x, nmax, rmin, rdelta, nstep, false, weigh, levels, scales, mins);
  const float max_scale = fits.max_scale, max_min = fits.max_min;
  uint8_t* packed = out + 4;
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  for (int j = 0; j < kSubs; ++j) {
    auto ls = static_cast<uint8_t>(NearestInt(inv_scale * scales[j]));
    auto lm = static_cast<uint8_t>(NearestInt(inv_min * mins[j]));
    if (ls > 63) ls = 63;
    if (lm > 63) lm = 63;
    if (j < 4) {
      packed[j] = ls;
      packed[j + 4] = lm;
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      packed[j - 4] = static_cast<uint8_t>(packed[j - 4] | ((ls >> 4) << 6));
      packed[j] = static_cast<uint8_t>(packed[j] | ((lm >> 4) << 6));
    }
  }
  const uint16_t d = F32ToF16(max_scale / 63.0f);
  const uint16_t dmin = F32ToF16(max_min / 63.0f);
  compressed::StoreU16(out, d);
  compressed::StoreU16(out + 2, dmin);
  for (int j = 0; j < kSubs; ++j) {
    uint8_t sc, m;
    ScaleMinK4(static_cast<size_t>(j), packed, sc, m);
    const float dl = F16ToF32(d) * static_cast<float>(sc);
    if (dl == 0) continue;  // keeps the search's levels
    const float ml = F16ToF32(dmin) * static_cast<float>(m);
    for (int i = 0; i < kSub; ++i) {
      const int level = NearestInt((x[kSub * j + i] + ml) / dl);
      levels[kSub * j + i] = static_cast<uint8_t>(Clamp(level, 0, nmax));
    }
  }
}

}  // namespace

void QuantizeBlockQ2_K(const float* x, uint8_t* out) {
  constexpr int kSub = 16, kSubs = kSuperBlock / kSub;
  constexpr float kLevels = 15.0f;  // the 4-bit scales' and minimums' largest value
  uint8_t levels[kSuperBlock];
  float mins[kSubs];
  float scales[kSubs];
  // Weights |x|, errors absolute (use_mad).
  const auto weigh = [](const float* xs, float* weights) {
    for (int l = 0; l < kSub; ++l) weights[l] = std::fabs(xs[l]);
  };
  const SubBlockFits fits =
      FitSubBlocks<kSub, kSubs>(x, 3, -0.5f, 0.1f, 15, true, weigh, levels, scales, mins);
  const float max_scale = fits.max_scale, max_min = fits.max_min;
  uint8_t* packed = out;  // scales[16]: sc | m << 4
  uint8_t* qs = out + 16;
  uint16_t d = F32ToF16(0.0f);
  uint16_t dmin = F32ToF16(0.0f);
  std::memset(packed, 0, kSubs);
  if (max_scale > 0) {
    const float iscale = kLevels / max_scale;
    for (int j = 0; j < kSubs; ++j) packed[j] = static_cast<uint8_t>(NearestInt(iscale * scales[j]));
    d = F32ToF16(max_scale / kLevels);
  }
  if (max_min > 0) {
    const float iscale = kLevels / max_min;
    for (int j = 0; j < kSubs; ++j) {
      packed[j] = static_cast<uint8_t>(packed[j] | (NearestInt(iscale * mins[j]) << 4));
    }
    dmin = F32ToF16(max_min / kLevels);
  }
  compressed::StoreU16(out + 80, d);
  compressed::StoreU16(out + 82, dmin);
  for (int j = 0; j < kSubs; ++j) {
    const float dl = F16ToF32(d) * static_cast<float>(packed[j] & 0xF);
    if (dl == 0) continue;  // keeps the search's levels
    const float ml = F16ToF32(dmin) * static_cast<float>(packed[j] >> 4);
    for (int i = 0; i < kSub; ++i) {
      levels[kSub * j + i] = static_cast<uint8_t>(Clamp(NearestInt((x[kSub * j + i] + ml) / dl), 0, 3));
    }
  }
  // Element 128c + 32t + l at bit 2t of qs[32c + l].
  for (int j = 0; j < static_cast<int>(kSuperBlock); j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = static_cast<uint8_t>(levels[j + l] | (levels[j + l + 32] << 2) |
                                           (levels[j + l + 64] << 4) | (levels[j + l + 96] << 6));
    }
  }
}

void QuantizeBlockQ3_K(const float* x, uint8_t* out) {
  constexpr int kSub = 16, kSubs = kSuperBlock / kSub;
  int8_t levels[kSuperBlock];
  float scales[kSubs];
  float max_scale = 0;
  float max_abs_scale = 0;
  for (int j = 0; j < kSubs; ++j) {
    scales[j] = FitQ3Scale(kSub, 4, x + kSub * j, levels + kSub * j);
    const float abs_scale = std::fabs(scales[j]);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scales[j];
    }
  }
  uint8_t* hmask = out;
  uint8_t* qs = out + 32;
  uint8_t* packed = out + 96;
  std::memset(packed, 0, 12);
  uint16_t d = F32ToF16(0.0f);
  if (max_scale != 0) {
    const float iscale = -32.0f / max_scale;
    for (int j = 0; j < kSubs; ++j) {
      const int l = Clamp(NearestInt(iscale * scales[j]), -32, 31) + 32;
      if (j < 8) {
        packed[j] = static_cast<uint8_t>(l & 0xF);
      } else {
        packed[j - 8] = static_cast<uint8_t>(packed[j - 8] | ((l & 0xF) << 4));
      }
      packed[j % 4 + 8] = static_cast<uint8_t>(packed[j % 4 + 8] | ((l >> 4) << (2 * (j / 4))));
    }
    d = F32ToF16(1 / iscale);
  }
  compressed::StoreU16(out + 108, d);
  for (int j = 0; j < kSubs; ++j) {
    const int low = j < 8 ? packed[j] & 0xF : packed[j - 8] >> 4;
    const int sc = (low | (((packed[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
    const float dl = F16ToF32(d) * static_cast<float>(sc);
    if (dl == 0) continue;  // keeps the search's levels
    for (int i = 0; i < kSub; ++i) {
      levels[kSub * j + i] = static_cast<int8_t>(Clamp(NearestInt(x[kSub * j + i] / dl), -4, 3) + 4);
    }
  }
  // Element e's high bit (level > 3) at bit e / 32 of hmask[e % 32], its low 2 bits at
  // bit 2·(e % 128 / 32) of qs[32·(e / 128) + e % 32].
  std::memset(hmask, 0, kSuperBlock / 8);
  for (int e = 0; e < static_cast<int>(kSuperBlock); ++e) {
    if (levels[e] > 3) {
      hmask[e % 32] = static_cast<uint8_t>(hmask[e % 32] | (1 << (e / 32)));
      levels[e] = static_cast<int8_t>(levels[e] - 4);
    }
  }
  for (int j = 0; j < static_cast<int>(kSuperBlock); j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = static_cast<uint8_t>(levels[j + l] | (levels[j + l + 32] << 2) |
                                           (levels[j + l + 64] << 4) | (levels[j + l + 96] << 6));
    }
  }
}

void QuantizeBlockQ4_K(const float* x, uint8_t* out) {
  uint8_t levels[kSuperBlock];
  ScaleMinSuperBlock(x, 15, -1.0f, 0.1f, 20, out, levels);
  uint8_t* qs = out + 16;
  for (int j = 0; j < static_cast<int>(kSuperBlock); j += 64) {
    for (int l = 0; l < 32; ++l) qs[l] = static_cast<uint8_t>(levels[j + l] | (levels[j + l + 32] << 4));
    qs += 32;
  }
}

void QuantizeBlockQ5_K(const float* x, uint8_t* out) {
  uint8_t levels[kSuperBlock];
  ScaleMinSuperBlock(x, 31, -0.5f, 0.1f, 15, out, levels);
  // Per 64 values, element l's low 4 bits in the low nibble of ql[l] and its fifth bit
  // in bit u1 of qh[l], element l + 32's in the high nibble and bit u2 = 2·u1 (u1 = 1,
  // 4, 16, 64 for the four chunks).
  uint8_t* qh = out + 16;
  uint8_t* ql = out + 48;
  std::memset(qh, 0, kSuperBlock / 8);
  uint8_t u1 = 1, u2 = 2;
  for (int j = 0; j < static_cast<int>(kSuperBlock); j += 64) {
    for (int l = 0; l < 32; ++l) {
      int low = levels[j + l];
      if (low > 15) {
        low -= 16;
        qh[l] = static_cast<uint8_t>(qh[l] | u1);
      }
      int high = levels[j + l + 32];
      if (high > 15) {
        high -= 16;
        qh[l] = static_cast<uint8_t>(qh[l] | u2);
      }
      ql[l] = static_cast<uint8_t>(low | (high << 4));
    }
    u1 = static_cast<uint8_t>(u1 << 2);
    u2 = static_cast<uint8_t>(u2 << 2);
    ql += 32;
  }
}

void QuantizeBlockQ6_K(const float* x, uint8_t* out) {
  constexpr int kSub = 16, kSubs = kSuperBlock / kSub;
  int8_t levels[kSuperBlock];
  float scales[kSubs];
  float max_scale = 0;
  float max_abs_scale = 0;
  for (int ib = 0; ib < kSubs; ++ib) {
    const float scale = FitSignedScale(kSub, 32, x + kSub * ib, levels + kSub * ib);
    scales[ib] = scale;
    const float abs_scale = std::fabs(scale);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scale;
    }
  }
  uint8_t* ql = out;
  uint8_t* qh = out + 128;
  auto* block_scales = reinterpret_cast<int8_t*>(out + 192);
  if (max_abs_scale < kGroupMaxEps) {
    std::memset(out, 0, compressed::kGgmlQ6KBlockBytes);
    return;
  }
  const float iscale = -128.0f / max_scale;
  const uint16_t d = F32ToF16(1 / iscale);
  compressed::StoreU16(out + 208, d);
  for (int ib = 0; ib < kSubs; ++ib) {
    const int l = NearestInt(iscale * scales[ib]);
    block_scales[ib] = static_cast<int8_t>(l < 127 ? l : 127);
  }
  for (int j = 0; j < kSubs; ++j) {
    const float dl = F16ToF32(d) * static_cast<float>(block_scales[j]);
    if (dl == 0) continue;  // keeps the search's levels
    for (int i = 0; i < kSub; ++i) {
      levels[kSub * j + i] = static_cast<int8_t>(Clamp(NearestInt(x[kSub * j + i] / dl), -32, 31) + 32);
    }
  }
  for (int j = 0; j < static_cast<int>(kSuperBlock); j += 128) {
    for (int l = 0; l < 32; ++l) {
      const int q1 = levels[j + l] & 0xF, q2 = levels[j + l + 32] & 0xF;
      const int q3 = levels[j + l + 64] & 0xF, q4 = levels[j + l + 96] & 0xF;
      ql[l] = static_cast<uint8_t>(q1 | (q3 << 4));
      ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
      qh[l] = static_cast<uint8_t>((levels[j + l] >> 4) | ((levels[j + l + 32] >> 4) << 2) |
                                   ((levels[j + l + 64] >> 4) << 4) | ((levels[j + l + 96] >> 4) << 6));
    }
    ql += 64;
    qh += 32;
  }
}

}  // namespace kvrt::simd
