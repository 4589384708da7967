// Run-time dispatch of the int8-activation kernel (int8_activations.h): Highway picks
// the target; on AVX3 the CPUID bit of AVX-512 VNNI then picks VPDPBUSD, and AVX2 uses
// VPMADDUBSW byte pairs (int8_matmul-inl.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "int8_matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "int8_matmul-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {

void Int8MatMul(const Int8Rows& a, size_t first_row, size_t m, const CompressedMatrixView& w,
                float* c, size_t ldc, size_t panel_begin, size_t panel_end, bool vnni) {
  const hn::ScalableTag<float> d;
  (void)vnni;
#if HWY_TARGET == HWY_AVX3
  if (vnni) return Int8MatMulFor<Int8Dot::kVnni>(d, a, first_row, m, w, c, ldc, panel_begin, panel_end);
#elif HWY_TARGET == HWY_AVX2
  return Int8MatMulFor<Int8Dot::kBytePairs>(d, a, first_row, m, w, c, ldc, panel_begin, panel_end);
#endif
  Int8MatMulFor<Int8Dot::kLanes>(d, a, first_row, m, w, c, ldc, panel_begin, panel_end);
}

void Int8QuantizeRow(const float* x, const Int8Rows& out, size_t row) {
  QuantizeRowFor(hn::ScalableTag<float>(), x, out, row);
}

// Whether this target's kernel would use VPDPBUSD on a CPU that has it.
bool Int8TargetCanUseVnni() { return HWY_TARGET == HWY_AVX3; }

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kvrt::simd {
namespace {

// AVX-512 VNNI (CPUID leaf 7, ECX bit 11) and the OS saving the ZMM state, which
// the AVX3 target Highway dispatched to already implies.
bool CpuHasAvx512Vnni() {
#if HWY_ARCH_X86
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni");
#else
  return false;
#endif
}

}  // namespace

HWY_EXPORT(Int8MatMul);
HWY_EXPORT(Int8TargetCanUseVnni);
HWY_EXPORT(Int8QuantizeRow);

void QuantizeRow(const float* x, const Int8Rows& out, size_t row) {
  HWY_DYNAMIC_DISPATCH(Int8QuantizeRow)(x, out, row);
}

bool Int8DotUsesVnni() {
  static const bool uses = HWY_DYNAMIC_DISPATCH(Int8TargetCanUseVnni)() && CpuHasAvx512Vnni();
  return uses;
}

void MatMulInt8(const Int8Rows& a, size_t first_row, size_t m, const CompressedMatrixView& w,
                float* c, size_t ldc, size_t panel_begin, size_t panel_end) {
  HWY_DYNAMIC_DISPATCH(Int8MatMul)(a, first_row, m, w, c, ldc, panel_begin, panel_end,
                                   Int8DotUsesVnni());
}

}  // namespace kvrt::simd
#endif  // HWY_ONCE
