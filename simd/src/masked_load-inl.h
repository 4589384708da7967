// Per-target MaskedLoadInBounds: Highway's MaskedLoad without reading masked-off lanes.
//
// Highway (1.0.3) documents that MaskedLoad may touch the memory of masked-off lanes
// where HWY_MEM_OPS_MIGHT_FAULT is set, and on the portable targets (EMU128, SCALAR)
// and SSE4 it is a full-vector load followed by a blend. For a row's last, partial
// vector that is a read past the end of the row's buffer: clang's ASan reports it
// (Debian's g++ 12 gets HWY_SCALAR instead, one lane, which never reads past), and
// at the end of a mapped page it would fault. AVX2 and AVX-512 load 4- and 8-byte
// lanes with VMASKMOV / masked loads, which never touch masked-off lanes, so there
// the native instruction stays; elsewhere the valid lanes are copied into a zeroed
// stack vector.
#if defined(KVRT_SIMD_MASKED_LOAD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_MASKED_LOAD_INL_H_
#undef KVRT_SIMD_MASKED_LOAD_INL_H_
#else
#define KVRT_SIMD_MASKED_LOAD_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The lanes of p whose mask lane is true, zero elsewhere; reads only those lanes.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE hn::Vec<D> MaskedLoadInBounds(hn::Mask<D> m, D d, const T* HWY_RESTRICT p) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  constexpr bool kNative = sizeof(T) >= 4;
#else
  constexpr bool kNative = false;
#endif
  if constexpr (kNative) {
    return hn::MaskedLoad(m, d, p);
  } else {
    constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(T);
    alignas(HWY_MAX_BYTES) T lanes[kMaxLanes] = {};
    uint8_t bits[(kMaxLanes + 7) / 8] = {};  // StoreMaskBits writes (lanes + 7) / 8
    hn::StoreMaskBits(d, m, bits);
    for (size_t i = 0; i < hn::Lanes(d); ++i) {
      if ((bits[i / 8] >> (i % 8)) & 1) lanes[i] = p[i];
    }
    return hn::Load(d, lanes);
  }
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_MASKED_LOAD_INL_H_ toggle
