// Shared by the int8-activation kernel tests (int8_activations_test.cc for q8_0, q4_0
// and q5_0; int8_kquant_test.cc for the K-quants; int8_iq4_test.cc for iq4_nl and
// iq4_xs): activation rows rounded to q8_0 blocks, and the checks every shape and panel
// range of MatMulInt8 must pass.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kvrt/simd/compressed_matrix.h"
#include "kvrt/simd/int8_activations.h"
#include "simd_test_support.h"

namespace kvrt::simd::int8_test {

// Written where a kernel must not write.
inline constexpr float kUntouched = -5.0f;

// Column counts that cover one panel, a partial one, whole groups and remainders.
inline std::vector<size_t> ColumnCounts() { return {1, 17, 32, 33, 64, 100, 161}; }

// A [K, N] matrix of `type` from ggml's own blocks (one row of blocks along K per
// column), repacked into the row layout and moved from there into the quad layout.
struct GgmlQuads {
  GgmlQuads(CompressedFormat format, size_t rows, size_t cols, std::vector<uint8_t> ggml_rows)
      : type(format),
        ggml(std::move(ggml_rows)),
        bytes(CompressedMatrixBytes(type, rows, cols)),
        row_storage(hwy::AllocateAligned<uint8_t>(bytes)),
        quad_storage(hwy::AllocateAligned<uint8_t>(bytes)) {
    RepackGgml(type, ggml.data(), rows, cols, row_storage.get());
    row_view = {type, row_storage.get(), rows, cols};
    quads = PackInt8Quads(row_view, quad_storage.get());
  }

  CompressedFormat type;
  std::vector<uint8_t> ggml;
  size_t bytes;
  hwy::AlignedFreeUniquePtr<uint8_t[]> row_storage, quad_storage;
  CompressedMatrixView row_view, quads;
};

// A GgmlQuads whose test decodes every column's ggml blocks itself into Parts, one per
// kPartRows rows along K (the subclass fills `parts` column by column), for the checks
// of the header's formula.
template <class Part, size_t kPartRows>
struct DecodedGgmlQuads : GgmlQuads {
  using GgmlQuads::GgmlQuads;
  const Part& Parts(size_t k, size_t n) const {
    return parts[n * (row_view.rows / kPartRows) + k / kPartRows];
  }
  std::vector<Part> parts;
};

// Random values along K, quantized column by column into ggml's blocks of `block_rows`
// values and `block_bytes` bytes by `quantize(x, out)` (ggml's reference quantizer):
// the rows a GgmlQuads of [rows, cols] takes. Every 89th value is 30 times the others.
template <class Quantize>
std::vector<uint8_t> RandomGgmlRows(size_t rows, size_t cols, size_t block_rows, size_t block_bytes,
                                    const Quantize& quantize, simd_test::Inputs& inputs) {
  auto dense = inputs.Uniform<float>(rows * cols, -1, 1);
  for (size_t i = 0; i < dense.size(); i += 89) dense[i] *= 30.0f;
  std::vector<uint8_t> ggml(cols * rows / block_rows * block_bytes);
  for (size_t b = 0; b < cols * rows / block_rows; ++b)
    quantize(dense.data() + b * block_rows, ggml.data() + b * block_bytes);
  return ggml;
}

// The quad layout holds every value of the row layout it was packed from: at() of
// every element (padding columns included) and GatherColumn of every fifth column.
inline ::testing::AssertionResult RelayoutIsLossless(const GgmlQuads& w) {
  const size_t rows = w.row_view.rows;
  for (size_t k = 0; k < rows; ++k) {
    for (size_t n = 0; n < w.quads.panels() * 32; ++n) {
      if (w.quads.at(k, n) != w.row_view.at(k, n)) {
        return ::testing::AssertionFailure() << "k=" << k << " n=" << n << ": " << w.quads.at(k, n)
                                             << " vs the row layout's " << w.row_view.at(k, n);
      }
    }
  }
  std::vector<float> column(rows), expected(rows);
  for (size_t n = 0; n < w.row_view.cols; n += 5) {
    GatherColumn(w.quads, n, column.data());
    GatherColumn(w.row_view, n, expected.data());
    if (column != expected) return ::testing::AssertionFailure() << "column " << n << " differs";
  }
  return ::testing::AssertionSuccess();
}

// RelayoutIsLossless for a [rows, N] matrix of `type` from make(rows, N, inputs), for
// every N of ColumnCounts().
template <class Make>
::testing::AssertionResult RelayoutIsLosslessForEveryColumnCount(CompressedFormat type, size_t rows,
                                                                 const Make& make) {
  if (!HasInt8Quads(type)) return ::testing::AssertionFailure() << "no quad layout";
  for (size_t cols : ColumnCounts()) {
    simd_test::Inputs inputs(simd_test::CaseSeed(rows, cols, static_cast<size_t>(type)));
    ::testing::AssertionResult lossless = RelayoutIsLossless(make(rows, cols, inputs));
    if (!lossless) return lossless << " (N=" << cols << ")";
  }
  return ::testing::AssertionSuccess();
}

// M activation rows of K values and their Int8Rows.
struct Activations {
  Activations(size_t m, size_t k, simd_test::Inputs& inputs)
      : x(inputs.Uniform<float>(m * k, -1, 1)),
        quants(m * k),
        scales(m * k / 32),
        sums(m * k / 32),
        half_sums(m * k / 16) {
    // Blocks of very different magnitudes, and one all-zero block (d = 0).
    for (size_t i = 0; i < x.size(); i += 61) x[i] *= 40.0f;
    if (x.size() >= 64) std::fill(x.begin() + 32, x.begin() + 64, 0.0f);
    Quantize(m);
  }
  // Rounds x (M rows) again, after a test replaced it.
  void Quantize(size_t m) {
    rows = {quants.data(), scales.data(), sums.data(), half_sums.data(), x.size() / m};
    for (size_t r = 0; r < m; ++r) QuantizeRow(x.data() + r * rows.k, rows, r);
  }
  std::vector<float> x;
  std::vector<int8_t> quants;
  std::vector<float> scales;
  std::vector<int32_t> sums, half_sums;
  Int8Rows rows;
};

// One activation row (K ≥ 260) at the quants' extremes: the first 256 values round to
// +127, the rest to ±127 in pairs that cancel: the largest byte products a kernel adds.
inline ::testing::AssertionResult SetExtremeActivations(Activations* act) {
  for (size_t k = 0; k < act->x.size(); ++k) act->x[k] = k < 256 || (k / 2) % 2 == 0 ? 1.0f : -1.0f;
  act->Quantize(1);
  if (act->quants[0] != 127 || act->quants[258] != -127)
    return ::testing::AssertionFailure() << "the activations did not round to ±127";
  return ::testing::AssertionSuccess();
}

// MatMulInt8 of rows [first_row, first_row + m) against `quads` (N = quads.cols)
// equals MatMulInt8Scalar bit for bit, writes nothing outside its rows and columns,
// and its last row computed alone equals the same row inside the tile. The twin's
// output (row r at r·(N + 3)) is left in *twin for formula checks.
inline ::testing::AssertionResult MatMulMatchesTwin(const Activations& act, size_t first_row,
                                                    size_t m, const CompressedMatrixView& quads,
                                                    std::vector<float>* twin) {
  const size_t cols = quads.cols, ldc = cols + 3;
  simd_test::GuardedBuffer<float> c(m * ldc, 1);
  for (size_t i = 0; i < m * ldc; ++i) c[i] = kUntouched;
  twin->assign(m * ldc, kUntouched);
  MatMulInt8(act.rows, first_row, m, quads, c.data(), ldc, 0, quads.panels());
  MatMulInt8Scalar(act.rows, first_row, m, quads, twin->data(), ldc, 0, quads.panels());
  if (!c.GuardsIntact()) return ::testing::AssertionFailure() << "wrote outside its rows";
  if (!simd_test::SameBits(c.data(), twin->data(), m * ldc))
    return ::testing::AssertionFailure() << "fast != twin";
  std::vector<float> alone(cols);
  MatMulInt8(act.rows, first_row + m - 1, 1, quads, alone.data(), cols, 0, quads.panels());
  if (!simd_test::SameBits(alone.data(), c.data() + (m - 1) * ldc, cols)) {
    return ::testing::AssertionFailure() << "a row alone != the same row in the tile";
  }
  return ::testing::AssertionSuccess();
}

// MatMulInt8 over panel ranges {0..3, 3..4, 4..9, 9..10} of a 10-panel `quads` (the last
// panel partial) writes only its ranges' columns, and the ranges together give the bits
// of one call over all panels, for one and for two rows of `act`.
inline ::testing::AssertionResult PanelRangesWriteOnlyTheirColumns(const Activations& act,
                                                                   const CompressedMatrixView& quads) {
  const size_t cols = quads.cols;
  for (size_t m : {1, 2}) {
    std::vector<float> whole(m * cols), split(m * cols, kUntouched);
    MatMulInt8(act.rows, 0, m, quads, whole.data(), cols, 0, quads.panels());
    for (const auto& [begin, end] : {std::pair<size_t, size_t>{0, 3}, {3, 4}, {4, 9}, {9, 10}}) {
      MatMulInt8(act.rows, 0, m, quads, split.data(), cols, begin, end);
      for (size_t r = 0; r < m; ++r) {
        for (size_t n = end * 32; n < cols; ++n) {
          if (split[r * cols + n] != kUntouched) {
            return ::testing::AssertionFailure() << "panels " << begin << ".." << end << " wrote column " << n;
          }
        }
      }
    }
    if (!simd_test::SameBits(whole.data(), split.data(), m * cols))
      return ::testing::AssertionFailure() << "M=" << m << ": the ranges differ from one call";
  }
  return ::testing::AssertionSuccess();
}

// Every column n < cols of `row` has the bits of expected(n), the header's formula.
template <class Expected>
::testing::AssertionResult RowEqualsFormula(const float* row, size_t cols,
                                            const Expected& expected) {
  for (size_t n = 0; n < cols; ++n) {
    const float value = expected(n);
    if (!simd_test::SameBits(&row[n], &value, 1)) {
      return ::testing::AssertionFailure()
             << "n=" << n << ": " << row[n] << " vs the formula's " << value;
    }
  }
  return ::testing::AssertionSuccess();
}

// MatMulInt8 of activation row 0 against `quads` equals its twin bit for bit, and the
// twin equals expected(n) for every column; *y gets the fast row.
template <class Expected>
::testing::AssertionResult OneRowMatchesTwinAndFormula(const Activations& act,
                                                       const CompressedMatrixView& quads,
                                                       const Expected& expected, std::vector<float>* y) {
  const size_t cols = quads.cols;
  std::vector<float> twin(cols);
  y->assign(cols, 0.0f);
  MatMulInt8(act.rows, 0, 1, quads, y->data(), cols, 0, quads.panels());
  MatMulInt8Scalar(act.rows, 0, 1, quads, twin.data(), cols, 0, quads.panels());
  if (!simd_test::SameBits(y->data(), twin.data(), cols)) return ::testing::AssertionFailure() << "fast != twin";
  return RowEqualsFormula(twin.data(), cols, expected);
}

// For every K of `depths`, N of ColumnCounts() and M of {1, 2, 3, 4, 5, 9}: the matrix
// make(K, N, inputs) passes MatMulMatchesTwin for M rows of M + 2, and for M = 1 and 3
// the twin's last row equals formula(w, act, row, n), the header's formula.
template <class Make, class Formula>
::testing::AssertionResult EveryShapeMatchesTwinAndFormula(size_t seed, const std::vector<size_t>& depths,
                                                          const Make& make, const Formula& formula) {
  for (size_t rows : depths) {
    for (size_t cols : ColumnCounts()) {
      for (size_t m : {1, 2, 3, 4, 5, 9}) {
        simd_test::Inputs inputs(simd_test::CaseSeed(rows * 7 + m, cols, seed));
        const auto w = make(rows, cols, inputs);
        Activations act(m + 2, rows, inputs);
        const size_t ldc = cols + 3, first_row = 1;
        std::vector<float> twin;
        ::testing::AssertionResult same = MatMulMatchesTwin(act, first_row, m, w.quads, &twin);
        if (!same) return same << " (K=" << rows << " N=" << cols << " M=" << m << ")";
        if (m != 1 && m != 3) continue;
        const size_t r = m - 1;  // the tile's last row
        ::testing::AssertionResult exact = RowEqualsFormula(
            &twin[r * ldc], cols, [&](size_t n) { return formula(w, act, first_row + r, n); });
        if (!exact) return exact << " (K=" << rows << " N=" << cols << ")";
      }
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kvrt::simd::int8_test
