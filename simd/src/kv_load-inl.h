// Per-target loads of stored K/V rows into the vectors attention computes in: an
// f32/f64 row as it is, an f16 row (Half) widened to f32 (exactly: every f16 is an
// f32), so that a kernel reads a compact cache directly, with no widening copy.
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

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_KV_LOAD_INL_H_ toggle
