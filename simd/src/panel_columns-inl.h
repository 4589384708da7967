// Per-target helpers shared by the matrix kernels (matvec-inl.h, matmul-inl.h):
// the shape of a panel in vectors, and loads/stores of one panel-wide row of outputs
// where only the first `valid` columns exist (the zero-padded last panel).
#if defined(KVRT_SIMD_PANEL_COLUMNS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_PANEL_COLUMNS_INL_H_
#undef KVRT_SIMD_PANEL_COLUMNS_INL_H_
#else
#define KVRT_SIMD_PANEL_COLUMNS_INL_H_
#endif

#include <cstddef>
#include <type_traits>

#include "hwy/highway.h"
#include "masked_load-inl.h"
#include "kvrt/simd/packed_matrix.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Vectors per panel row on this target: 2 on AVX3, 4 on AVX2, NR on the scalar one.
template <class D>
constexpr size_t PanelVectors() {
  using T = hn::TFromD<D>;
  static_assert(kPanelWidth<T> % hn::MaxLanes(D()) == 0, "panel must be whole vectors");
  return kPanelWidth<T> / hn::MaxLanes(D());
}

// Stores the first `valid` of the panel-wide row acc[0..kVecs) to out.
template <size_t kVecs, class D, typename T = hn::TFromD<D>>
HWY_INLINE void StorePanelRow(D d, const hn::Vec<D>* acc, size_t valid, T* out) {
  const size_t lanes = hn::Lanes(d);
  for (size_t v = 0; v < kVecs; ++v) {
    const size_t first = v * lanes;
    if (first + lanes <= valid) {
      hn::StoreU(acc[v], d, out + first);
    } else if (first < valid) {
      hn::BlendedStore(acc[v], hn::FirstN(d, valid - first), d, out + first);
    }
  }
}

// Loads the first `valid` columns of a panel-wide row into acc (zeros beyond).
template <size_t kVecs, class D, typename T = hn::TFromD<D>>
HWY_INLINE void LoadPanelRow(D d, const T* in, size_t valid, hn::Vec<D>* acc) {
  const size_t lanes = hn::Lanes(d);
  for (size_t v = 0; v < kVecs; ++v) {
    const size_t first = v * lanes;
    if (first + lanes <= valid) {
      acc[v] = hn::LoadU(d, in + first);
    } else if (first < valid) {
      acc[v] = MaskedLoadInBounds(hn::FirstN(d, valid - first), d, in + first);
    } else {
      acc[v] = hn::Zero(d);
    }
  }
}

// The last `count` (< kMax + 1) panels from p as one group of exactly that size.
template <size_t kMax, class Group>
HWY_INLINE void RestPanelGroup(size_t p, size_t count, const Group& group) {
  if constexpr (kMax > 0) {
    if (count == kMax) return group(p, std::integral_constant<size_t, kMax>());
    RestPanelGroup<kMax - 1>(p, count, group);
  }
}

// Calls group(p, std::integral_constant<size_t, n>) over the panels [begin, end):
// groups of kGroup consecutive panels, then the rest (fewer than kGroup) as ONE
// group of that size. A lone panel gives only PanelVectors() FMA chains, too few
// to hide the FMA latency, so the rest of a short range (the matrix-vector tasks
// of a small model are a few panels each) still streams its panels side by side.
template <size_t kGroup, class Group>
HWY_INLINE void ForPanelGroups(size_t begin, size_t end, const Group& group) {
  size_t p = begin;
  for (; p + kGroup <= end; p += kGroup) group(p, std::integral_constant<size_t, kGroup>());
  RestPanelGroup<kGroup - 1>(p, end - p, group);
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_PANEL_COLUMNS_INL_H_ toggle
