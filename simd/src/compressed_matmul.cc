// Run-time dispatch of the compressed MatMul (compressed_matrix.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "compressed_matmul.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "compressed_matmul-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {

void CompressedMatMul(const float* a, size_t lda, size_t m, const CompressedMatrixView& w,
                      float* c, size_t ldc, size_t panel_begin, size_t panel_end) {
  const hn::ScalableTag<float> d;
  switch (w.type) {
    case CompressedFormat::kBf16:
      return CompressedMatMulPanels<Bf16Rows, false>(d, a, lda, m, w, c, ldc, panel_begin, panel_end);
    case CompressedFormat::kF16:
      return CompressedMatMulPanels<F16Rows, false>(d, a, lda, m, w, c, ldc, panel_begin, panel_end);
    case CompressedFormat::kQ8_0:
      return CompressedMatMulPanels<Q8Quants, true>(d, a, lda, m, w, c, ldc, panel_begin, panel_end);
    case CompressedFormat::kQ4_0:
      return CompressedMatMulPanels<Q4Quants, true>(d, a, lda, m, w, c, ldc, panel_begin, panel_end);
    case CompressedFormat::kIQ4_NL:
      return CompressedMatMulPanels<IQ4NLQuants, true>(d, a, lda, m, w, c, ldc, panel_begin,
                                                        panel_end);
    case CompressedFormat::kIQ4_XS:
      return CompressedMatMulPanels<IQ4XSQuants, true>(d, a, lda, m, w, c, ldc, panel_begin,
                                                        panel_end);
    case CompressedFormat::kQ4_K:
      return CompressedMatMulPanels<Q4KQuants, true>(d, a, lda, m, w, c, ldc, panel_begin, panel_end);
    case CompressedFormat::kQ6_K:
      return CompressedMatMulPanels<Q6KQuants, true>(d, a, lda, m, w, c, ldc, panel_begin, panel_end);
    case CompressedFormat::kQ5_K:
      return CompressedMatMulPanels<Q5KQuants, true>(d, a, lda, m, w, c, ldc, panel_begin, panel_end);
    case CompressedFormat::kQ5_0:
      return CompressedMatMulPanels<Q50Quants, true>(d, a, lda, m, w, c, ldc, panel_begin, panel_end);
    case CompressedFormat::kQ3_K:
      return CompressedMatMulPanels<Q3KQuants, true>(d, a, lda, m, w, c, ldc, panel_begin, panel_end);
    case CompressedFormat::kQ4_1:
      return CompressedMatMulPanels<Q41Quants, true>(d, a, lda, m, w, c, ldc, panel_begin, panel_end);
    case CompressedFormat::kQ5_1:
      return CompressedMatMulPanels<Q51Quants, true>(d, a, lda, m, w, c, ldc, panel_begin, panel_end);
    case CompressedFormat::kQ2_K:
      return CompressedMatMulPanels<Q2KQuants, true>(d, a, lda, m, w, c, ldc, panel_begin, panel_end);
  }
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kvrt/simd/compressed_matrix.h"

namespace kvrt::simd {

HWY_EXPORT(CompressedMatMul);

void MatMul(const float* a, size_t lda, size_t m, const CompressedMatrixView& w, float* c,
            size_t ldc, size_t panel_begin, size_t panel_end) {
  HWY_DYNAMIC_DISPATCH(CompressedMatMul)(a, lda, m, w, c, ldc, panel_begin, panel_end);
}

}  // namespace kvrt::simd
#endif  // HWY_ONCE
