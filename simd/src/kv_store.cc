// Run-time dispatch of StoreKvRowF16 and StoreKvRowBf16 (prefix_attention.h): the
// prefill of a 16-bit KV cache rounds every new K/V element once, megabytes a layer.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kv_store.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "bf16_round-inl.h"
#include "hwy/highway.h"
#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/simd/prefix_attention.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// x86's F16C conversion rounds to nearest even (the rounding passed explicitly),
// overflows to infinity and quiets a NaN keeping its top payload bits: F32ToF16's
// bits. Elsewhere (Highway's portable f16 demotion truncates) element by element.
void KvRowToF16(const float* row, size_t n, Half* out) {
  size_t i = 0;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
  const hn::ScalableTag<float> d;
  const hn::Rebind<hwy::float16_t, decltype(d)> df16;
  const size_t lanes = hn::Lanes(d);
  static_assert(sizeof(Half) == sizeof(hwy::float16_t), "a Half is its 16 bits");
  auto* halves = reinterpret_cast<hwy::float16_t*>(out);
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::DemoteTo(df16, hn::LoadU(d, row + i)), df16, halves + i);
#endif
  for (; i < n; ++i) out[i].bits = F32ToF16(row[i]);
}

void KvRowToBf16(const float* row, size_t n, Bf16* out) {
  static_assert(sizeof(Bf16) == sizeof(uint16_t), "a Bf16 is its 16 bits");
  RoundToBf16Bits<false>(hn::ScalableTag<float>(), row, n, reinterpret_cast<uint16_t*>(out));
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvrt::simd {

HWY_EXPORT(KvRowToF16);
HWY_EXPORT(KvRowToBf16);

void StoreKvRowF16(const float* row, size_t n, Half* out) { HWY_DYNAMIC_DISPATCH(KvRowToF16)(row, n, out); }
void StoreKvRowBf16(const float* row, size_t n, Bf16* out) { HWY_DYNAMIC_DISPATCH(KvRowToBf16)(row, n, out); }

}  // namespace kvrt::simd
#endif  // HWY_ONCE
