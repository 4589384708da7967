// The q8_0 KV cache's row quantizers (prefix_attention.h): the fast engine's f32
// rows, by ggml's own block quantizer, and the reference engine's f64 rows by the
// same formula in f64.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/simd/prefix_attention.h"

namespace kvrt::simd {

float Q8Rows::value() const { return F16ToF32(scale_bits()) * static_cast<float>(at->quant); }

void QuantizeKvRowQ8_0(const float* row, size_t head_width, Q8* quants, Half* scales) {
  static_assert(kQ8KvBlock == kQuantBlock, "a KV block is a q8_0 weight block");
  for (size_t begin = 0, block = 0; begin < head_width; begin += kQ8KvBlock, ++block) {
    const size_t n = std::min(kQ8KvBlock, head_width - begin);
    float values[kQ8KvBlock] = {};  // the last block zero-padded: its amax is its own
    std::copy_n(row + begin, n, values);
    const bool finite = std::all_of(values, values + n, [](float x) { return std::isfinite(x); });
    Q8* out = quants + begin;
    if (!finite) {
      // ggml's quantizer needs finite input; the block's NaN scale makes every value
      // it holds non-finite, which the engine reports as the cache's append check does.
      scales[block].bits = 0x7E00;
      std::fill_n(out, kQ8KvBlock, Q8{0});
      continue;
    }
    uint8_t bytes[2 + kQ8KvBlock];
    QuantizeBlockQ8_0(values, bytes);
    scales[block].bits = static_cast<uint16_t>(bytes[0] | bytes[1] << 8);
    std::memcpy(out, bytes + 2, kQ8KvBlock);
  }
}

void RoundKvRowToQ8_0(const double* row, size_t head_width, double* out) {
  for (size_t begin = 0; begin < head_width; begin += kQ8KvBlock) {
    const size_t n = std::min(kQ8KvBlock, head_width - begin);
    const double* x = row + begin;
    double* y = out + begin;
    if (!std::all_of(x, x + n, [](double v) { return std::isfinite(v); })) {
      std::copy_n(x, n, y);  // non-finite stays non-finite: the append check reports it
      continue;
    }
    double amax = 0.0;
    for (size_t j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[j]));
    const double d = amax / 127.0;
    const double id = d != 0.0 ? 1.0 / d : 0.0;
    const double stored = RoundToF16(d);
    for (size_t j = 0; j < n; ++j) y[j] = stored * std::round(x[j] * id);
  }
}

}  // namespace kvrt::simd
