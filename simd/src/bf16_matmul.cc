// Run-time dispatch of the bf16-activation kernel (bf16_activations.h): Highway picks
// the target; on AVX3 the CPUID bit of AVX512_BF16 then picks VDPBF16PS, and AMX-BF16
// (amx.h) the tiles.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bf16_matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "bf16_matmul-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {

void Bf16MatMul(const Bf16Rows& a, size_t first_row, size_t m, const CompressedMatrixView& w, float* c,
                size_t ldc, size_t panel_begin, size_t panel_end, bool vdpbf16ps) {
  const hn::ScalableTag<float> d;
  (void)vdpbf16ps;
#if HWY_TARGET == HWY_AVX3
  if (vdpbf16ps) return MatMulBf16For<Bf16Dot::kVdpbf16ps>(d, a, first_row, m, w, c, ldc, panel_begin, panel_end);
#endif
  MatMulBf16For<Bf16Dot::kLanes>(d, a, first_row, m, w, c, ldc, panel_begin, panel_end);
}

void Bf16RoundRow(const float* x, const Bf16Rows& out, size_t row) {
  // A row's pairs are its bf16 values in order, two to a little-endian 32-bit word.
  RoundToBf16Bits<true>(hn::ScalableTag<float>(), x, out.k, reinterpret_cast<uint16_t*>(out.pairs + row * out.pairs_per_row()));
}

// Whether this target is the AVX-512 one, whose kernel uses VDPBF16PS on a CPU that
// has it, and beside which MatMulBf16 may pick the AMX tiles.
bool Bf16TargetIsAvx512() { return HWY_TARGET == HWY_AVX3; }

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kvrt/simd/amx.h"

namespace kvrt::simd {
namespace {

// AVX512_BF16 (CPUID leaf 7 sub-leaf 1, EAX bit 5); the AVX3 target Highway
// dispatched to already implies AVX-512 F/BW/VL and the OS saving the ZMM state.
bool CpuHasAvx512Bf16() {
#if HWY_ARCH_X86
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16") != 0;
  }();
  return has;
#else
  return false;
#endif
}

}  // namespace

HWY_EXPORT(Bf16MatMul);
HWY_EXPORT(Bf16TargetIsAvx512);
HWY_EXPORT(Bf16RoundRow);

void RoundRowToBf16(const float* x, const Bf16Rows& out, size_t row) {
  HWY_DYNAMIC_DISPATCH(Bf16RoundRow)(x, out, row);
}

bool Bf16DotUsesVdpbf16ps() { return HWY_DYNAMIC_DISPATCH(Bf16TargetIsAvx512)() && CpuHasAvx512Bf16(); }

bool Bf16DotUsesAmx() { return AmxAllowed() && HWY_DYNAMIC_DISPATCH(Bf16TargetIsAvx512)() && AmxBf16Available(); }

void MatMulBf16Vectors(const Bf16Rows& a, size_t first_row, size_t m, const CompressedMatrixView& w, float* c,
                       size_t ldc, size_t panel_begin, size_t panel_end) {
  HWY_DYNAMIC_DISPATCH(Bf16MatMul)(a, first_row, m, w, c, ldc, panel_begin, panel_end, CpuHasAvx512Bf16());
}

void MatMulBf16(const Bf16Rows& a, size_t first_row, size_t m, const CompressedMatrixView& w, float* c,
                size_t ldc, size_t panel_begin, size_t panel_end) {
  if (Bf16DotUsesAmx() && MatMulBf16Amx(a, first_row, m, w, c, ldc, panel_begin, panel_end)) return;
  MatMulBf16Vectors(a, first_row, m, w, c, ldc, panel_begin, panel_end);
}

}  // namespace kvrt::simd
#endif  // HWY_ONCE
