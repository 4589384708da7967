// Per-target loads of stored K/V rows into the vectors attention computes in: an
// f32/f64 row as it is, an f16 (Half) or bf16 (Bf16) row widened to f32 (exactly:
// every f16 and every bf16 is an f32), so that a kernel reads a compact cache
// directly, with no widening copy.
#if defined(KVRT_SIMD_KV_LOAD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_KV_LOAD_INL_H_
#undef KVRT_SIMD_KV_LOAD_INL_H_
#else
#define KVRT_SIMD_KV_LOAD_INL_H_
#endif

#include <cstddef>
#include <cstring>

#include "hwy/highway.h"
#include "kvrt/simd/prefix_attention.h"
#include "masked_load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// A whole vector of a row stored in the computation's own type.
template <class D>
HWY_INLINE hn::Vec<D> LoadKv(D d, const hn::TFromD<D>* p) {
  return hn::LoadU(d, p);
}

// A whole vector of an f16 row, widened (f32 computations only).
template <class D>
HWY_INLINE hn::Vec<D> LoadKv(D d, const Half* p) {
  static_assert(sizeof(hn::TFromD<D>) == 4, "f16 rows widen to f32");
  const hn::Rebind<hwy::float16_t, D> dh;
  return hn::PromoteTo(d, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
}

// The first lanes of `m` (a FirstN mask: a row's last, partial vector), zero
// elsewhere, reading only those lanes.
template <class D>
HWY_INLINE hn::Vec<D> LoadKvTail(hn::Mask<D> m, D d, const hn::TFromD<D>* p) {
  return MaskedLoadInBounds(m, d, p);
}

template <class D>
HWY_INLINE hn::Vec<D> LoadKvTail(hn::Mask<D> m, D d, const Half* p) {
  static_assert(sizeof(hn::TFromD<D>) == 4, "f16 rows widen to f32");
  const hn::Rebind<hwy::float16_t, D> dh;
  alignas(HWY_MAX_BYTES) hwy::float16_t lanes[HWY_MAX_BYTES / sizeof(float)] = {};
  std::memcpy(lanes, p, hn::CountTrue(d, m) * sizeof(Half));
  return hn::PromoteTo(d, hn::LoadU(dh, lanes));
}

// A bf16 is the top 16 bits of the f32 it stands for: widen each lane to 32 bits
// and shift it up (integer operations only, the same on every target).
template <class D>
HWY_INLINE hn::Vec<D> WidenBf16(D d, hn::Vec<hn::Rebind<uint16_t, D>> bits) {
  const hn::RebindToUnsigned<D> du;
  return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du, bits)));
}

// A whole vector of a bf16 row, widened (f32 computations only).
template <class D>
HWY_INLINE hn::Vec<D> LoadKv(D d, const Bf16* p) {
  static_assert(sizeof(hn::TFromD<D>) == 4, "bf16 rows widen to f32");
  const hn::Rebind<uint16_t, D> d16;
  return WidenBf16(d, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(p)));
}

template <class D>
HWY_INLINE hn::Vec<D> LoadKvTail(hn::Mask<D> m, D d, const Bf16* p) {
  static_assert(sizeof(hn::TFromD<D>) == 4, "bf16 rows widen to f32");
  const hn::Rebind<uint16_t, D> d16;
  alignas(HWY_MAX_BYTES) uint16_t lanes[HWY_MAX_BYTES / sizeof(float)] = {};
  std::memcpy(lanes, p, hn::CountTrue(d, m) * sizeof(Bf16));
  return WidenBf16(d, hn::LoadU(d16, lanes));
}

// A whole vector of a q8_0 row: its quants widened to f32 and multiplied by their
// block's scale (exact: an 8-bit integer times an f16). The vector lies in one block:
// it starts at a multiple of its lane count, at most the block size.
template <class D>
HWY_INLINE hn::Vec<D> Q8Values(D d, hn::Vec<hn::Rebind<int8_t, D>> quants, const Q8Rows& p) {
  static_assert(sizeof(hn::TFromD<D>) == 4, "q8_0 rows widen to f32");
  static_assert(hn::MaxLanes(D()) <= kQ8KvBlock, "a vector must lie in one q8_0 block");
  const hn::Rebind<int32_t, D> d32;
  const hn::Rebind<hwy::float16_t, D> dh;
  const hn::Rebind<uint16_t, D> d16;
  const auto scale = hn::PromoteTo(d, hn::BitCast(dh, hn::Set(d16, p.scale_bits())));
  return hn::Mul(hn::ConvertTo(d, hn::PromoteTo(d32, quants)), scale);
}

template <class D>
HWY_INLINE hn::Vec<D> LoadKv(D d, Q8Rows p) {
  const hn::Rebind<int8_t, D> d8;
  return Q8Values(d, hn::LoadU(d8, reinterpret_cast<const int8_t*>(p.at)), p);
}

template <class D>
HWY_INLINE hn::Vec<D> LoadKvTail(hn::Mask<D> m, D d, Q8Rows p) {
  const hn::Rebind<int8_t, D> d8;
  alignas(HWY_MAX_BYTES) int8_t lanes[HWY_MAX_BYTES / sizeof(float)] = {};
  std::memcpy(lanes, p.at, hn::CountTrue(d, m));
  return Q8Values(d, hn::LoadU(d8, lanes), p);
}

// The first byte of a K/V row, for prefetching (a q8_0 row: its quants).
template <class K>
HWY_INLINE const char* KvAddress(const K* p) {
  return reinterpret_cast<const char*>(p);
}
HWY_INLINE const char* KvAddress(Q8Rows p) { return reinterpret_cast<const char*>(p.at); }

// Bytes of one stored element behind a K/V pointer (q8_0: its quant).
template <class K>
constexpr size_t KvElementBytes(const K*) {
  return sizeof(K);
}
constexpr size_t KvElementBytes(Q8Rows) { return sizeof(Q8); }

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_KV_LOAD_INL_H_ toggle
