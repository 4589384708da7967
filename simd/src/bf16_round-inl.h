// Rounding f32 rows to bf16 bits, per target: the activation rows of the bf16 path
// (bf16_activations.h, subnormal results flushed as VDPBF16PS reads them) and the rows
// of a bf16 KV cache (prefix_attention.h, F32ToBf16's bits as they are).
#if defined(KVRT_SIMD_BF16_ROUND_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_BF16_ROUND_INL_H_
#undef KVRT_SIMD_BF16_ROUND_INL_H_
#else
#define KVRT_SIMD_BF16_ROUND_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// x[0, k) as bf16 bits into out[0, k): F32ToBf16 (round to nearest even; a NaN made
// quiet, bits (x >> 16) | 64), with kFlushSubnormals a subnormal result then made a
// zero of its sign; the same bits as the scalar code, lane by lane.
template <bool kFlushSubnormals, class D>
HWY_INLINE void RoundToBf16Bits(D d, const float* x, size_t k, uint16_t* out) {
  using DU = hn::RebindToUnsigned<D>;
  const DU du;
  const hn::Rebind<uint16_t, D> d16;
  const size_t lanes = hn::Lanes(d);
  const auto one = hn::Set(du, 1u), round = hn::Set(du, 0x7FFFu), quiet = hn::Set(du, 64u);
  const auto exponent = hn::Set(du, 0x7F80u), sign = hn::Set(du, 0x8000u);
  const auto bf16_of = [&](hn::Vec<D> v) HWY_ATTR {
    const auto bits = hn::BitCast(du, v);
    const auto nearest = hn::ShiftRight<16>(hn::Add(bits, hn::Add(round, hn::And(hn::ShiftRight<16>(bits), one))));
    const auto nan = hn::Or(hn::ShiftRight<16>(bits), quiet);
    auto rounded = hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), nan, nearest);
    if constexpr (kFlushSubnormals) {
      const auto subnormal = hn::Eq(hn::And(rounded, exponent), hn::Zero(du));
      rounded = hn::IfThenElse(subnormal, hn::And(rounded, sign), rounded);
    }
    // (Highway 1.0.3 demotes u16 from i32 lanes; every value here is below 2^16.)
    return hn::DemoteTo(d16, hn::BitCast(hn::RebindToSigned<D>(), rounded));
  };
  size_t i = 0;
  for (; i + lanes <= k; i += lanes) hn::StoreU(bf16_of(hn::LoadU(d, x + i)), d16, out + i);
  if (i < k) {
    alignas(HWY_MAX_BYTES) float rest[HWY_MAX_BYTES / sizeof(float)] = {};
    alignas(HWY_MAX_BYTES) uint16_t bits[HWY_MAX_BYTES / sizeof(float)];
    std::memcpy(rest, x + i, (k - i) * sizeof(float));
    hn::Store(bf16_of(hn::Load(d, rest)), d16, bits);
    std::memcpy(out + i, bits, (k - i) * sizeof(uint16_t));
  }
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_BF16_ROUND_INL_H_ toggle
