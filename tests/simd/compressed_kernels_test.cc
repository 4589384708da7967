// The compressed matrix kernels (compressed_matrix.h) on every compiled target: MatVec
// and MatMul against their scalar twins with the derived bounds; bit for bit against a
// scalar emulation of the documented arithmetic (bf16/f16: one FMA chain per output, so
// also the f32 kernels on the dequantized matrix; the quantized types: block-scaled
// accumulation, from ggml's own blocks); 
// MatMul rows equal to MatVec; no dependence on the panel range.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "hwy/tests/hwy_gtest.h"
#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/simd/matmul.h"
#include "kvrt/simd/matvec.h"
#include "kvrt/simd/pack_matrix.h"
#include "kquant_blocks.h"
#include "simd_test_support.h"
#include "sanitizer_build.h"
#include "tested_targets.h"

namespace kvrt::simd {
namespace {

using simd_test::GuardedBuffer;
using simd_test::Inputs;

class CompressedKernelsTest : public hwy::TestWithParamTarget {};
KVRT_TARGET_INSTANTIATE_TEST_SUITE_P(CompressedKernelsTest);

constexpr CompressedFormat kAllTypes[] = {CompressedFormat::kBf16, CompressedFormat::kF16,
                                          CompressedFormat::kQ8_0, CompressedFormat::kQ4_0,
                                          CompressedFormat::kQ5_0, CompressedFormat::kQ4_1,
                                          CompressedFormat::kQ5_1, CompressedFormat::kIQ4_NL,
                                          CompressedFormat::kIQ4_XS, CompressedFormat::kQ4_K,
                                          CompressedFormat::kQ5_K, CompressedFormat::kQ6_K,
                                          CompressedFormat::kQ3_K, CompressedFormat::kQ2_K};

// ggml's kvalues_iq4nl (ggml-common.h), written out here so that the emulation does not
// share the library's copy.
constexpr int kIQ4NLTable[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                 1,    13,   25,  38,  53,  69,  89,  113};

bool IsBlock32(CompressedFormat type) {
  return type == CompressedFormat::kQ8_0 || type == CompressedFormat::kQ4_0 ||
         type == CompressedFormat::kQ5_0 || type == CompressedFormat::kIQ4_NL ||
         type == CompressedFormat::kQ4_1 || type == CompressedFormat::kQ5_1;
}
// q4_1 and q5_1: an f16 minimum m per block of 32 beside d.
bool HasBlockMin(CompressedFormat type) {
  return type == CompressedFormat::kQ4_1 || type == CompressedFormat::kQ5_1;
}

// The super-block types (iq4_xs shares the K-quants' layout).
bool IsKQuant(CompressedFormat type) {
  return type == CompressedFormat::kQ4_K || type == CompressedFormat::kQ5_K ||
         type == CompressedFormat::kQ6_K || type == CompressedFormat::kQ3_K ||
         type == CompressedFormat::kIQ4_XS || type == CompressedFormat::kQ2_K;
}
// The K-quants with a minimum per sub-block.
bool HasMin(CompressedFormat type) {
  return type == CompressedFormat::kQ4_K || type == CompressedFormat::kQ5_K ||
         type == CompressedFormat::kQ2_K;
}

// Σ of 16 activations in the tree compressed_matrix.h documents for q2_k.
float DocumentedSubBlockSum16(const float* x) {
  float t[8];
  for (size_t j = 0; j < 8; ++j) t[j] = x[j] + x[j + 8];
  for (size_t j = 0; j < 4; ++j) t[j] = t[j] + t[j + 4];
  for (size_t j = 0; j < 2; ++j) t[j] = t[j] + t[j + 2];
  return t[0] + t[1];
}
// Σ of 32 activations in the tree compressed_matrix.h documents for q4_k and q5_k.
float DocumentedSubBlockSum(const float* x) {
  float t[16];
  for (size_t j = 0; j < 16; ++j) t[j] = x[j] + x[j + 16];
  for (size_t j = 0; j < 8; ++j) t[j] = t[j] + t[j + 8];
  for (size_t j = 0; j < 4; ++j) t[j] = t[j] + t[j + 4];
  for (size_t j = 0; j < 2; ++j) t[j] = t[j] + t[j + 2];
  return t[0] + t[1];
}
constexpr float kUntouched = -5.0f;

// A random matrix packed in `type` at an offset from a 64-byte boundary (the kernels
// must not rely on alignment), with its dequantized f32 copy packed by PackMatrix.
struct CompressedCase {
  CompressedCase(CompressedFormat type, size_t rows, size_t cols, size_t offset, Inputs& inputs)
      : storage(hwy::AllocateAligned<uint8_t>(CompressedMatrixBytes(type, rows, cols) + 64)),
        dequantized(rows * cols),
        f32_storage(PackedElementCount<float>(rows, cols), 0) {
    auto dense = inputs.Uniform<float>(rows * cols, -1, 1);
    // Some blocks far larger than others, so the scales differ.
    for (size_t i = 0; i < dense.size(); i += 97) dense[i] *= 50.0f;
    uint8_t* data = storage.get() + offset;
    PackCompressed(type, dense.data(), rows, cols, false, data);
    view = {type, data, rows, cols};
    for (size_t k = 0; k < rows; ++k) {
      for (size_t n = 0; n < cols; ++n) dequantized[k * cols + n] = view.at(k, n);
    }
    f32_view = PackMatrix(dequantized.data(), rows, cols, false, f32_storage.data());
    // The quantized types' integers, scales and minimums, from ggml's quantizers
    // (which PackCompressed follows bit for bit: compressed_pack_test.cc).
    if (IsBlock32(type)) {
      sub_rows = kQuantBlock;
      quants.resize(rows * cols);
      scales.resize(rows / kQuantBlock * cols);
      if (HasBlockMin(type)) mins.resize(rows / kQuantBlock * cols);
      std::vector<float> column(kQuantBlock);
      uint8_t block[34];
      for (size_t n = 0; n < cols; ++n) {
        for (size_t b = 0; b < rows / kQuantBlock; ++b) {
          for (size_t r = 0; r < kQuantBlock; ++r) column[r] = dense[(b * kQuantBlock + r) * cols + n];
          if (type == CompressedFormat::kQ8_0) QuantizeBlockQ8_0(column.data(), block);
          if (type == CompressedFormat::kQ4_0) QuantizeBlockQ4_0(column.data(), block);
          if (type == CompressedFormat::kQ5_0) QuantizeBlockQ5_0(column.data(), block);
          if (type == CompressedFormat::kIQ4_NL) QuantizeBlockIQ4_NL(column.data(), block);
          if (type == CompressedFormat::kQ4_1) QuantizeBlockQ4_1(column.data(), block);
          if (type == CompressedFormat::kQ5_1) QuantizeBlockQ5_1(column.data(), block);
          scales[b * cols + n] = F16ToF32(static_cast<uint16_t>(block[0] | block[1] << 8));
          // q4_1/q5_1: the minimum the kernel subtracts is −m (m the f16 after d).
          if (HasBlockMin(type)) mins[b * cols + n] = -F16ToF32(static_cast<uint16_t>(block[2] | block[3] << 8));
          for (size_t r = 0; r < kQuantBlock; ++r) {
            int q = 0;
            if (type == CompressedFormat::kQ4_1) {
              // ggml's block_q4_1: d, m, then q4_0's qs[16]; q unsigned, no offset.
              q = r < 16 ? block[4 + r] & 0xF : block[4 + r - 16] >> 4;
            } else if (type == CompressedFormat::kQ5_1) {
              // ggml's block_q5_1: d, m, qh[4] (bit r of the little-endian word), qs[16].
              const int low = r < 16 ? block[8 + r] & 0xF : block[8 + r - 16] >> 4;
              q = low | ((block[4 + r / 8] >> (r % 8)) & 1) << 4;
            } else if (type == CompressedFormat::kQ8_0) {
              q = static_cast<int8_t>(block[2 + r]);
            } else if (type == CompressedFormat::kQ4_0) {
              q = (r < 16 ? block[2 + r] & 0xF : block[2 + r - 16] >> 4) - 8;
            } else if (type == CompressedFormat::kIQ4_NL) {
              // ggml's block_iq4_nl: q4_0's bytes, the nibble an index into the table.
              q = kIQ4NLTable[r < 16 ? block[2 + r] & 0xF : block[2 + r - 16] >> 4];
            } else {
              // ggml's block_q5_0: qh[4] (bit r of the little-endian word), then qs[16].
              const int low = r < 16 ? block[6 + r] & 0xF : block[6 + r - 16] >> 4;
              q = (low | ((block[2 + r / 8] >> (r % 8)) & 1) << 4) - 16;
            }
            quants[(b * kQuantBlock + r) * cols + n] = static_cast<float>(q);
          }
        }
      }
    }
    if (IsKQuant(type)) {
      sub_rows = type == CompressedFormat::kQ6_K || type == CompressedFormat::kQ3_K ||
                         type == CompressedFormat::kQ2_K
                     ? 16
                     : 32;
      quants.resize(rows * cols);
      scales.resize(rows / sub_rows * cols);
      if (HasMin(type)) mins.resize(rows / sub_rows * cols);
      std::vector<float> column(rows);
      std::vector<uint8_t> row(GgmlRowBytes(type, rows));
      const size_t block_bytes = GgmlRowBytes(type, kSuperBlock);
      for (size_t n = 0; n < cols; ++n) {
        for (size_t k = 0; k < rows; ++k) column[k] = dense[k * cols + n];
        for (size_t b = 0; b < rows / kSuperBlock; ++b) {
          if (type == CompressedFormat::kQ4_K) QuantizeBlockQ4_K(column.data() + kSuperBlock * b, row.data() + block_bytes * b);
          if (type == CompressedFormat::kQ5_K) QuantizeBlockQ5_K(column.data() + kSuperBlock * b, row.data() + block_bytes * b);
          if (type == CompressedFormat::kQ3_K) QuantizeBlockQ3_K(column.data() + kSuperBlock * b, row.data() + block_bytes * b);
          if (type == CompressedFormat::kQ2_K) QuantizeBlockQ2_K(column.data() + kSuperBlock * b, row.data() + block_bytes * b);
          if (type == CompressedFormat::kQ6_K) QuantizeBlockQ6_K(column.data() + kSuperBlock * b, row.data() + block_bytes * b);
          if (type == CompressedFormat::kIQ4_XS) QuantizeBlockIQ4_XS(column.data() + kSuperBlock * b, row.data() + block_bytes * b);
        }
        for (size_t k = 0; k < rows; ++k) {
          const simd_test::KQuantElement e = simd_test::DecodeKQuant(type, row.data(), k);
          quants[k * cols + n] = static_cast<float>(e.q);
          scales[k / sub_rows * cols + n] = e.scale;
          if (!mins.empty()) mins[k / sub_rows * cols + n] = e.min;
        }
      }
    }
  }

  // y[n] as the fast kernels compute it (compressed_matrix.h, Method), with fused
  // multiply-adds where the target has them and multiply-then-add where it has not.
  float Emulated(const float* x, size_t n, bool fused) const {
    const auto mul_add = [fused](float a, float b, float c) {
      if (fused) return std::fma(a, b, c);
      const float product = a * b;
      return product + c;
    };
    const size_t rows = view.rows, cols = view.cols;
    float acc = 0.0f;
    if (quants.empty()) {
      for (size_t k = 0; k < rows; ++k) acc = mul_add(x[k], dequantized[k * cols + n], acc);
      return acc;
    }
    for (size_t b = 0; b < rows / sub_rows; ++b) {
      float partial = 0.0f;
      for (size_t k = b * sub_rows; k < (b + 1) * sub_rows; ++k) {
        partial = mul_add(x[k], quants[k * cols + n], partial);
      }
      acc = mul_add(scales[b * cols + n], partial, acc);
      if (!mins.empty()) {
        // acc − min·S, fused or not.
        const float min = mins[b * cols + n];
        const float sum = sub_rows == 16 ? DocumentedSubBlockSum16(x + b * sub_rows)
                                         : DocumentedSubBlockSum(x + b * sub_rows);
        acc = fused ? std::fma(-min, sum, acc) : acc - min * sum;
      }
    }
    return acc;
  }
  bool BlockScaled() const { return view.type != CompressedFormat::kBf16 && view.type != CompressedFormat::kF16; }

  // The derived bound against the twin (compressed_matrix.h, Max error).
  long double TwinBound(const float* x, size_t n) const {
    const long double k = static_cast<long double>(view.rows);
    const long double eps = simd_test::Epsilon<float>(), denorm = simd_test::DenormMin<float>();
    switch (view.type) {
      case CompressedFormat::kBf16:
      case CompressedFormat::kF16:
        return simd_test::SumOfProductsBound<float>(view.rows, AbsColumnSum(x, n));
      case CompressedFormat::kQ8_0:
      case CompressedFormat::kQ4_0:
      case CompressedFormat::kQ5_0:
      case CompressedFormat::kIQ4_NL:
      case CompressedFormat::kIQ4_XS:
        return (k + k / 32 + 34) * eps / 2 * AbsColumnSum(x, n) + (k + k / 32) * denorm;
      case CompressedFormat::kQ6_K:
      case CompressedFormat::kQ3_K:
        return (k + k / 16 + 18) * eps / 2 * AbsColumnSum(x, n) + (k + k / 16) * denorm;
      case CompressedFormat::kQ4_K:
      case CompressedFormat::kQ5_K:
      case CompressedFormat::kQ4_1:
      case CompressedFormat::kQ5_1:
        return (k + k / 16 + 40) * eps / 2 * AbsTermSum(x, n) + (k + k / 16) * denorm;
      case CompressedFormat::kQ2_K:
        return (k + k / 8 + 24) * eps / 2 * AbsTermSum(x, n) + (k + k / 8) * denorm;
    }
    return 0;
  }
  // q2_k, q4_k, q5_k: Σ_k |x[k]|·(|d·sc·q| + |dmin·m|), the two terms the kernel sums apart
  // (q4_1, q5_1: |d·q| + |m|).
  long double AbsTermSum(const float* x, size_t n) const {
    long double sum = 0;
    for (size_t k = 0; k < view.rows; ++k) {
      const size_t at = k * view.cols + n;
      const long double scaled = std::fabs(static_cast<long double>(scales[k / sub_rows * view.cols + n]) * quants[at]);
      sum += std::fabs(static_cast<long double>(x[k])) * (scaled + std::fabs(mins[k / sub_rows * view.cols + n]));
    }
    return sum;
  }
  // Σ_k |x[k]·W[k][n]| over the dequantized weights.
  long double AbsColumnSum(const float* x, size_t n) const {
    long double sum = 0;
    for (size_t k = 0; k < view.rows; ++k) {
      sum += std::fabs(static_cast<long double>(x[k]) * dequantized[k * view.cols + n]);
    }
    return sum;
  }

  hwy::AlignedFreeUniquePtr<uint8_t[]> storage;
  CompressedMatrixView view;
  std::vector<float> dequantized;  // [K, N]
  GuardedBuffer<float> f32_storage;
  PackedMatrixView<float> f32_view;
  // The quantized types: [K, N] quants as the kernels multiply them (q8_0 q, q4_0 q − 8,
  // q5_0 q − 16, iq4_nl kvalues_iq4nl[q], q2_k, q4_k and q5_k q, q6_k q − 32, q3_k q − 4), [K / sub_rows, N] scales (d, or d·sc), q2_k, q4_k and q5_k
  // [K / sub_rows, N] minimums dmin·m (q4_1, q5_1: −m, also with q itself as quants); all
  // empty for bf16/f16.
  size_t sub_rows = 0;
  std::vector<float> quants;
  std::vector<float> scales;
  std::vector<float> mins;
};

std::vector<size_t> RowCounts(CompressedFormat type) {
  if (IsKQuant(type)) return {0, 256, 512, 1024};
  if (IsBlock32(type)) return {0, 32, 64, 96, 160, 288, 544};
  return {0, 1, 2, 7, 32, 33, 100, 255, 257, 544};
}

// Every N % 32 and N % 16 class, up to several panels.
std::vector<size_t> ColumnCounts() {
  std::vector<size_t> cols;
  for (size_t n = 1; n <= 33; ++n) cols.push_back(n);
  for (size_t n : {47, 48, 63, 64, 65, 100, 129, 161}) cols.push_back(n);
  return cols;
}

// The portable targets (HWY_SCALAR under g++, HWY_EMU128 under clang) do not fuse
// MulAdd: they multiply, then add.
bool MultipliesThenAdds(int64_t target) { return target == HWY_SCALAR || target == HWY_EMU128; }

TEST_P(CompressedKernelsTest, MatVecMatchesTwinAndEmulation) {
  const bool scalar_target = MultipliesThenAdds(GetParam());
  for (CompressedFormat type : kAllTypes) {
    // A sanitizer build takes a sample that still reaches every type (see CaseRunsInThisBuild).
    size_t index = 0;
    for (size_t rows : RowCounts(type)) {
      for (size_t cols : ColumnCounts()) {
        if (!sanitizer_build::CaseRunsInThisBuild(index++)) continue;
        Inputs inputs(simd_test::CaseSeed(rows, cols, static_cast<size_t>(type)));
        CompressedCase w(type, rows, cols, (rows + cols) % 2 == 0 ? 0 : 4, inputs);
        const auto x = inputs.Uniform<float>(rows, -1, 1);
        GuardedBuffer<float> x_buffer(rows, 1), y(cols, 3), y_f32(cols, 0);
        x_buffer.CopyFrom(x);
        std::vector<float> twin(cols);
        MatVecScalar(w.view, x.data(), twin.data(), 0, w.view.panels());
        MatVec(w.view, x_buffer.data(), y.data(), 0, w.view.panels());
        MatVec(w.f32_view, x.data(), y_f32.data(), 0, w.f32_view.panels());
        const auto where = ::testing::Message()
                           << CompressedFormatName(type) << " K=" << rows << " N=" << cols;
        ASSERT_TRUE(y.GuardsIntact()) << where;
        if (!w.BlockScaled()) {
          ASSERT_TRUE(simd_test::SameBits(y.data(), y_f32.data(), cols)) << where;
        }
        for (size_t n = 0; n < cols; ++n) {
          const float expected = w.Emulated(x.data(), n, !scalar_target);
          ASSERT_TRUE(simd_test::SameBits(&y[n], &expected, 1)) << where << " n=" << n << ": " << y[n] << " vs " << expected;
          ASSERT_TRUE(simd_test::WithinBound(y[n], twin[n], w.TwinBound(x.data(), n))) << where << " n=" << n;
        }
        // No FMA on the scalar target: bf16/f16 make the same roundings in the same order.
        if (scalar_target && !w.BlockScaled()) {
          ASSERT_TRUE(simd_test::SameBits(y.data(), twin.data(), cols)) << where;
        }
      }
    }
  }
}

// C = A·W for M = 1..17 (every remainder of the row tiles), strided A and C: within the
// bound of the twin, every row bit for bit MatVec of that row, padding of C untouched.
void ExpectMatMul(CompressedFormat type, size_t m, size_t rows, size_t cols, bool scalar_target) {
  const size_t lda = rows + 3, ldc = cols + 2;
  Inputs inputs(simd_test::CaseSeed(m, rows, cols * 4 + static_cast<size_t>(type)));
  CompressedCase w(type, rows, cols, 0, inputs);
  const auto a = inputs.Uniform<float>(m * lda, -1, 1);
  GuardedBuffer<float> c(m * ldc, 1);
  for (size_t i = 0; i < m * ldc; ++i) c[i] = kUntouched;
  std::vector<float> twin(m * ldc, kUntouched), c_f32(m * ldc, kUntouched);
  MatMulScalar(a.data(), lda, m, w.view, twin.data(), ldc, 0, w.view.panels());
  MatMul(a.data(), lda, m, w.view, c.data(), ldc, 0, w.view.panels());
  MatMul(a.data(), lda, m, w.f32_view, c_f32.data(), ldc, 0, w.f32_view.panels());
  const auto where = ::testing::Message()
                     << CompressedFormatName(type) << " M=" << m << " K=" << rows << " N=" << cols;
  ASSERT_TRUE(c.GuardsIntact()) << where;
  if (!w.BlockScaled()) {
    ASSERT_TRUE(simd_test::SameBits(c.data(), c_f32.data(), m * ldc)) << where;
  }
  std::vector<float> y(cols);
  for (size_t r = 0; r < m; ++r) {
    MatVec(w.view, a.data() + r * lda, y.data(), 0, w.view.panels());
    ASSERT_TRUE(simd_test::SameBits(y.data(), c.data() + r * ldc, cols)) << where << " row " << r;
    for (size_t n = 0; n < cols; ++n) {
      ASSERT_TRUE(simd_test::WithinBound(c[r * ldc + n], twin[r * ldc + n],
                                         w.TwinBound(a.data() + r * lda, n)))
          << where << " at (" << r << ", " << n << ")";
    }
    for (size_t n = cols; n < ldc; ++n) ASSERT_EQ(c[r * ldc + n], kUntouched) << where;
  }
  if (scalar_target && !w.BlockScaled()) {
    ASSERT_TRUE(simd_test::SameBits(c.data(), twin.data(), m * ldc)) << where;
  }
}

TEST_P(CompressedKernelsTest, MatMulMatchesTwinAndEqualsMatVecRows) {
  const bool scalar_target = MultipliesThenAdds(GetParam());
  size_t type_index = 0;
  for (CompressedFormat type : kAllTypes) {
    const std::vector<size_t> row_counts =
        IsKQuant(type) ? std::vector<size_t>{256, 512} : std::vector<size_t>{32, 96, 288};
    // A sanitizer build takes a sample that still reaches every M (see CaseRunsInThisBuild).
    size_t index = 0;
    for (size_t m = 1; m <= 17; ++m) {
      for (size_t rows : row_counts) {
        for (size_t cols : {1, 17, 32, 33, 100}) {
          if (!sanitizer_build::CaseRunsInThisBuild(index++)) continue;
          ExpectMatMul(type, m, rows, cols, scalar_target);
          if (HasFatalFailure()) return;
        }
      }
    }
    // K = 0, and more rows than one M block and more depth than one K block (the
    // largest case, which a sanitizer build runs for a sample of the types).
    ExpectMatMul(type, 5, 0, 40, scalar_target);
    if (sanitizer_build::CaseRunsInThisBuild(type_index++)) {
      ExpectMatMul(type, 300, IsKQuant(type) ? 768 : 576, 70, scalar_target);
    }
    if (HasFatalFailure()) return;
  }
}

// Any split of the panels into ranges gives the same bits, and a range writes only its
// own columns; MatMul likewise.
TEST_P(CompressedKernelsTest, SplitInvariant) {
  for (CompressedFormat type : kAllTypes) {
    const size_t rows = IsKQuant(type) ? 512 : 320, cols = 7 * 32 - 5, m = 11;
    Inputs inputs(simd_test::CaseSeed(rows, cols, 7 + static_cast<size_t>(type)));
    CompressedCase w(type, rows, cols, 0, inputs);
    const auto a = inputs.Uniform<float>(m * rows, -1, 1);
    const size_t panels = w.view.panels();
    std::vector<float> whole(cols), whole_c(m * cols);
    MatVec(w.view, a.data(), whole.data(), 0, panels);
    MatMul(a.data(), rows, m, w.view, whole_c.data(), cols, 0, panels);
    for (size_t split = 0; split <= panels; ++split) {
      std::vector<float> y(cols, kUntouched), c(m * cols, kUntouched);
      MatVec(w.view, a.data(), y.data(), 0, split);
      for (size_t n = split * 32; n < cols; ++n) ASSERT_EQ(y[n], kUntouched) << "n=" << n;
      MatVec(w.view, a.data(), y.data(), split, panels);
      ASSERT_TRUE(simd_test::SameBits(y.data(), whole.data(), cols)) << "split=" << split;
      MatMul(a.data(), rows, m, w.view, c.data(), cols, 0, split);
      MatMul(a.data(), rows, m, w.view, c.data(), cols, split, panels);
      ASSERT_TRUE(simd_test::SameBits(c.data(), whole_c.data(), m * cols)) << "split=" << split;
    }
  }
}

}  // namespace
}  // namespace kvrt::simd
