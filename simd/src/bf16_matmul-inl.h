// Per-target body of MatMulBf16 (bf16_activations.h): register tiles of rows × panels
// over the pair rows of kBf16Pairs panels, every column's accumulator one chain over
// the pairs in ascending order (VDPBF16PS where the CPU has it, its definition in two
// FMAs per pair elsewhere), so a column's bits do not depend on the tile it is in.
#if defined(KVRT_SIMD_BF16_MATMUL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_BF16_MATMUL_INL_H_
#undef KVRT_SIMD_BF16_MATMUL_INL_H_
#else
#define KVRT_SIMD_BF16_MATMUL_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "bf16_round-inl.h"
#include "kvrt/simd/bf16_activations.h"
#include "panel_columns-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// How a target forms the pair products.
enum class Bf16Dot {
  kLanes,      // portable: both halves of each lane widened to f32, two FMAs (the
               // products are exact, so fused or not they round alike)
  kVdpbf16ps,  // AVX512_BF16: one VDPBF16PS per vector of pairs
};

// Pair rows the one-row (decode) kernel requests ahead in each of its panels: 1 KiB,
// as the exact bf16 kernel does (compressed_matvec-inl.h, kPrefetchRows).
inline constexpr size_t kPairPrefetchRows = 8;

// acc + VDPBF16PS(w, a): the pairs of bf16 in each 32-bit lane of w times those of a.
template <class V, class VU>
HWY_INLINE V Vdpbf16ps(V acc, VU w, VU a) {
#if HWY_TARGET == HWY_AVX3
  // Inline assembly because Highway 1.0.3 has no op for it; the caller checked CPUID
  // (Bf16DotUsesVdpbf16ps).
  __m512 raw = acc.raw;
  asm("vdpbf16ps %2, %1, %0" : "+v"(raw) : "v"(w.raw), "v"(a.raw));
  return V{raw};
#else
  static_assert(sizeof(V) == 0, "VDPBF16PS is used on the AVX3 target only");
  (void)w;
  (void)a;
  return acc;
#endif
}

// The f32 values of the even-k (low) and odd-k (high) bf16 of every 32-bit lane.
template <class D>
HWY_INLINE hn::Vec<D> EvenBf16(D d, hn::Vec<hn::RebindToUnsigned<D>> pairs) {
  return hn::BitCast(d, hn::ShiftLeft<16>(pairs));
}
template <class D>
HWY_INLINE hn::Vec<D> OddBf16(D d, hn::Vec<hn::RebindToUnsigned<D>> pairs) {
  return hn::BitCast(d, hn::And(pairs, hn::Set(hn::RebindToUnsigned<D>(), 0xFFFF0000u)));
}

// C rows [0, kRows) (a, c: the tile's first row) × panels [panel, panel + kPanels) over
// all K/2 pair rows.
template <Bf16Dot kDot, size_t kRows, size_t kPanels, class D>
HWY_INLINE void PairTile(D d, const uint32_t* a, size_t a_stride, const CompressedMatrixView& w,
                         size_t panel, float* c, size_t ldc) {
  using DU = hn::RebindToUnsigned<D>;
  const DU du;
  constexpr size_t kVecs = PanelVectors<D>();
  constexpr size_t kWeights = kPanels * kVecs;
  const size_t lanes = hn::Lanes(d);
  const size_t pairs = w.rows / 2;
  const uint32_t* panels[kPanels];
  for (size_t g = 0; g < kPanels; ++g) panels[g] = reinterpret_cast<const uint32_t*>(w.panel(panel + g));
  hn::Vec<D> acc[kRows][kWeights];
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t x = 0; x < kWeights; ++x) acc[r][x] = hn::Zero(d);
  }
  constexpr size_t kPairWords = kCompressedPanelWidth;  // 32-bit lanes per pair row
  for (size_t i = 0; i < pairs; ++i) {
    hn::Vec<DU> weights[kWeights];
    for (size_t g = 0; g < kPanels; ++g) {
      if constexpr (kRows == 1) {
        if (i + kPairPrefetchRows < pairs) hwy::Prefetch(panels[g] + (i + kPairPrefetchRows) * kPairWords);
      }
      for (size_t v = 0; v < kVecs; ++v) weights[g * kVecs + v] = hn::Load(du, panels[g] + i * kPairWords + v * lanes);
    }
    if constexpr (kDot == Bf16Dot::kVdpbf16ps) {
      for (size_t r = 0; r < kRows; ++r) {
        const auto pair = hn::Set(du, a[r * a_stride + i]);
        for (size_t x = 0; x < kWeights; ++x) acc[r][x] = Vdpbf16ps(acc[r][x], weights[x], pair);
      }
    } else {
      hn::Vec<D> even[kWeights], odd[kWeights];
      for (size_t x = 0; x < kWeights; ++x) {
        even[x] = EvenBf16(d, weights[x]);
        odd[x] = OddBf16(d, weights[x]);
      }
      for (size_t r = 0; r < kRows; ++r) {
        const auto pair = hn::Set(du, a[r * a_stride + i]);
        const auto a_odd = OddBf16(d, pair);
        const auto a_even = EvenBf16(d, pair);
        for (size_t x = 0; x < kWeights; ++x) {
          acc[r][x] = hn::MulAdd(a_odd, odd[x], acc[r][x]);
          acc[r][x] = hn::MulAdd(a_even, even[x], acc[r][x]);
        }
      }
    }
  }
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t g = 0; g < kPanels; ++g) {
      const size_t first_col = (panel + g) * kCompressedPanelWidth;
      StorePanelRow<kVecs>(d, &acc[r][g * kVecs], std::min(kCompressedPanelWidth, w.cols - first_col),
                           c + r * ldc + first_col);
    }
  }
}

// Tiles of several rows: kTileRows × kTilePanels where the registers hold them (24
// accumulators on AVX-512), fewer rows for the last tile of a range.
template <class D>
constexpr size_t Bf16TileRows() {
  return HWY_MAX_BYTES >= 64 ? 6 : 2;
}
template <class D>
constexpr size_t Bf16TilePanels() {
  return HWY_MAX_BYTES >= 64 ? 2 : 1;
}

template <Bf16Dot kDot, size_t kPanels, size_t kRows, class D>
HWY_INLINE void RowsTile(D d, size_t rows, const uint32_t* a, size_t a_stride, const CompressedMatrixView& w,
                         size_t panel, float* c, size_t ldc) {
  if constexpr (kRows > 1) {
    if (rows < kRows) return RowsTile<kDot, kPanels, kRows - 1>(d, rows, a, a_stride, w, panel, c, ldc);
  }
  PairTile<kDot, kRows, kPanels>(d, a, a_stride, w, panel, c, ldc);
}

template <Bf16Dot kDot, class D>
HWY_INLINE void MatMulBf16For(D d, const Bf16Rows& a, size_t first_row, size_t m, const CompressedMatrixView& w,
                              float* c, size_t ldc, size_t panel_begin, size_t panel_end) {
  const size_t stride = a.pairs_per_row();
  const uint32_t* rows = a.pairs + first_row * stride;
  if (m == 1) {
    ForPanelGroups<4>(panel_begin, panel_end, [&](size_t p, auto count) HWY_ATTR {
      PairTile<kDot, 1, decltype(count)::value>(d, rows, stride, w, p, c, ldc);
    });
    return;
  }
  constexpr size_t kTileRows = Bf16TileRows<D>(), kTilePanels = Bf16TilePanels<D>();
  ForPanelGroups<kTilePanels>(panel_begin, panel_end, [&](size_t p, auto count) HWY_ATTR {
    for (size_t r = 0; r < m; r += kTileRows) {
      RowsTile<kDot, decltype(count)::value, kTileRows>(d, std::min(kTileRows, m - r), rows + r * stride, stride,
                                                        w, p, c + r * ldc, ldc);
    }
  });
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_BF16_MATMUL_INL_H_ toggle
