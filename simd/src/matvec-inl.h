// Per-target body of MatVec (matvec.h).
#if defined(KVRT_SIMD_MATVEC_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_MATVEC_INL_H_
#undef KVRT_SIMD_MATVEC_INL_H_
#else
#define KVRT_SIMD_MATVEC_INL_H_
#endif

#include <algorithm>
#include <cstddef>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kvrt/simd/packed_matrix.h"
#include "panel_columns-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Panel rows each panel stream asks for ahead of the one it reads (2 KiB of an f32
// panel). The four streams of a group each cross a 4 KiB page every 32 rows, where
// the hardware's stream prefetch starts over; the requests bridge those restarts and
// bring a matrix read from memory to the rate of a plain read of its bytes. 32 rows
// ahead is no better (figures in docs/performance/design_measurements.md).
inline constexpr size_t kMatVecPrefetchRows = 16;

// y for the columns of kPanels consecutive panels starting at `first_panel`: every
// panel row k is read once and contributes x[k]·W[k][n] to one FMA chain per column.
// Streaming several panels together gives kPanels·kVecs independent chains.
template <size_t kPanels, class D, typename T = hn::TFromD<D>>
HWY_INLINE void MatVecPanelGroup(D d, const PackedMatrixView<T>& w, const T* x, T* y,
                                 size_t first_panel) {
  constexpr size_t kWidth = kPanelWidth<T>;
  constexpr size_t kVecs = PanelVectors<D>();
  const size_t lanes = hn::Lanes(d);
  const T* panel[kPanels];
  hn::Vec<D> acc[kPanels][kVecs];
  for (size_t g = 0; g < kPanels; ++g) {
    panel[g] = w.panel(first_panel + g);
    for (size_t v = 0; v < kVecs; ++v) acc[g][v] = hn::Zero(d);
  }
  constexpr size_t kLineElements = 64 / sizeof(T);
  // Past the group's last rows the requests run on into the first rows of the next
  // kPanels panels, which the task's next group reads (or, at a task's end, a
  // neighbour's: a prefetch never faults and the matrix ends at w.panels()).
  const size_t panels = w.panels();
  const size_t stride = w.stride();
  for (size_t k = 0; k < w.rows; ++k) {
    const auto xk = hn::Set(d, x[k]);
    if (k + kMatVecPrefetchRows < w.rows) {
      for (size_t g = 0; g < kPanels; ++g) {
        const T* ahead = panel[g] + (k + kMatVecPrefetchRows) * kWidth;
        for (size_t e = 0; e < kWidth; e += kLineElements) hwy::Prefetch(ahead + e);
      }
    } else {
      const size_t next_row = k + kMatVecPrefetchRows - w.rows;
      for (size_t g = 0; g < kPanels; ++g) {
        if (first_panel + kPanels + g >= panels) break;
        const T* ahead = panel[g] + kPanels * stride + next_row * kWidth;
        for (size_t e = 0; e < kWidth; e += kLineElements) hwy::Prefetch(ahead + e);
      }
    }
    for (size_t g = 0; g < kPanels; ++g) {
      const T* row = panel[g] + k * kWidth;
      for (size_t v = 0; v < kVecs; ++v) {
        acc[g][v] = hn::MulAdd(xk, hn::LoadU(d, row + v * lanes), acc[g][v]);
      }
    }
  }
  for (size_t g = 0; g < kPanels; ++g) {
    const size_t first_col = (first_panel + g) * kWidth;
    StorePanelRow<kVecs>(d, acc[g], std::min(kWidth, w.cols - first_col), y + first_col);
  }
}

// Groups sized for about eight accumulators (4 panels on AVX3, 2 on AVX2, 1 on the
// scalar target), then one smaller group for the rest of the range. A column's
// arithmetic is the same in any group.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE void MatVecPanels(D d, const PackedMatrixView<T>& w, const T* x, T* y,
                             size_t panel_begin, size_t panel_end) {
  constexpr size_t kGroup = std::max<size_t>(1, 8 / PanelVectors<D>());
  ForPanelGroups<kGroup>(panel_begin, panel_end, [&](size_t p, auto panels) {
    MatVecPanelGroup<decltype(panels)::value>(d, w, x, y, p);
  });
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_MATVEC_INL_H_ toggle
