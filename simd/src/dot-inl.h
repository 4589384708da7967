// Per-target body of Dot (dot.h): compiled once per Highway target through
// dot.cc's foreach_target, and includable by any other foreach_target unit that
// wants to call the kernel without a second dispatch.
#if defined(KVRT_SIMD_DOT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KVRT_SIMD_DOT_INL_H_
#undef KVRT_SIMD_DOT_INL_H_
#else
#define KVRT_SIMD_DOT_INL_H_
#endif

#include <cstddef>

#include "hwy/highway.h"
#include "masked_load-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kvrt::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Σ a[i]·b[i] with four vector accumulators (enough to cover the FMA latency at two
// loads per FMA), a masked last vector for n % lanes, then a fixed pairwise tree.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE T DotProduct(D d, const T* a, const T* b, size_t n) {
  const size_t lanes = hn::Lanes(d);
  auto sum0 = hn::Zero(d);
  auto sum1 = hn::Zero(d);
  auto sum2 = hn::Zero(d);
  auto sum3 = hn::Zero(d);
  size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    sum0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), sum0);
    sum1 = hn::MulAdd(hn::LoadU(d, a + i + lanes), hn::LoadU(d, b + i + lanes), sum1);
    sum2 = hn::MulAdd(hn::LoadU(d, a + i + 2 * lanes), hn::LoadU(d, b + i + 2 * lanes), sum2);
    sum3 = hn::MulAdd(hn::LoadU(d, a + i + 3 * lanes), hn::LoadU(d, b + i + 3 * lanes), sum3);
  }
  for (; i + lanes <= n; i += lanes) {
    sum0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), sum0);
  }
  if (i < n) {
    // Masked-off lanes load as zero and never touch memory past a + n.
    const auto tail = hn::FirstN(d, n - i);
    sum1 = hn::MulAdd(MaskedLoadInBounds(tail, d, a + i), MaskedLoadInBounds(tail, d, b + i), sum1);
  }
  const auto sum = hn::Add(hn::Add(sum0, sum1), hn::Add(sum2, sum3));
  return hn::GetLane(hn::SumOfLanes(d, sum));
}

}  // namespace kvrt::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // KVRT_SIMD_DOT_INL_H_ toggle
