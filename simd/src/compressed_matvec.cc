// Run-time dispatch of the compressed MatVec (compressed_matrix.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "compressed_matvec.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "compressed_matvec-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {

void CompressedMatVec(const CompressedMatrixView& w, const float* x, float* y,
                      size_t panel_begin, size_t panel_end) {
  const hn::ScalableTag<float> d;
  switch (w.type) {
    case CompressedFormat::kBf16:
      return CompressedMatVecPanels<Bf16Rows, false>(d, w, x, y, panel_begin, panel_end);
    case CompressedFormat::kF16:
      return CompressedMatVecPanels<F16Rows, false>(d, w, x, y, panel_begin, panel_end);
    case CompressedFormat::kQ8_0:
      return CompressedMatVecPanels<Q8Quants, true>(d, w, x, y, panel_begin, panel_end);
    case CompressedFormat::kQ4_0:
      return CompressedMatVecPanels<Q4Quants, true>(d, w, x, y, panel_begin, panel_end);
    case CompressedFormat::kIQ4_NL:
      return CompressedMatVecPanels<IQ4NLQuants, true>(d, w, x, y, panel_begin, panel_end);
    case CompressedFormat::kIQ4_XS:
      return CompressedMatVecPanels<IQ4XSQuants, true>(d, w, x, y, panel_begin, panel_end);
    case CompressedFormat::kQ4_K:
      return CompressedMatVecPanels<Q4KQuants, true>(d, w, x, y, panel_begin, panel_end);
    case CompressedFormat::kQ6_K:
      return CompressedMatVecPanels<Q6KQuants, true>(d, w, x, y, panel_begin, panel_end);
    case CompressedFormat::kQ5_K:
      return CompressedMatVecPanels<Q5KQuants, true>(d, w, x, y, panel_begin, panel_end);
    case CompressedFormat::kQ5_0:
      return CompressedMatVecPanels<Q50Quants, true>(d, w, x, y, panel_begin, panel_end);
    case CompressedFormat::kQ3_K:
      return CompressedMatVecPanels<Q3KQuants, true>(d, w, x, y, panel_begin, panel_end);
    case CompressedFormat::kQ4_1:
      return CompressedMatVecPanels<Q41Quants, true>(d, w, x, y, panel_begin, panel_end);
    case CompressedFormat::kQ5_1:
      return CompressedMatVecPanels<Q51Quants, true>(d, w, x, y, panel_begin, panel_end);
    case CompressedFormat::kQ2_K:
      return CompressedMatVecPanels<Q2KQuants, true>(d, w, x, y, panel_begin, panel_end);
  }
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kvrt/simd/compressed_matrix.h"

namespace kvrt::simd {

HWY_EXPORT(CompressedMatVec);

void MatVec(const CompressedMatrixView& w, const float* x, float* y, size_t panel_begin,
            size_t panel_end) {
  HWY_DYNAMIC_DISPATCH(CompressedMatVec)(w, x, y, panel_begin, panel_end);
}

}  // namespace kvrt::simd
#endif  // HWY_ONCE
