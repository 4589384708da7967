// q8_0 / q4_0 weights times activations rounded to 8 bits: the opt-in int8-activation
// path (EngineOptions::int8_activations). It does llama.cpp's arithmetic for these
// weight types: each activation row is rounded to ggml's q8_0 blocks (32 values, one
// f16 scale each), and every block's dot product is an exact integer sum. It is LESS
// EXACT than the f32-activation kernels (compressed_matrix.h), whose only rounding
// is the f32 arithmetic: rounding an activation to 8 bits errs by up to half a step
// of its block, amax/254. In exchange a block of 32 weights of one column costs 8
// integer multiply-adds of four products each (AVX-512 VNNI VPDPBUSD) instead of 32
// conversions and 32 FMAs, so the kernels read the weights at memory speed.
//
// Weights: a CompressedMatrixView of type q8_0 or q4_0 in CompressedLayout::kInt8Quads
// (the same blocks, scales and bytes per weight as the row layout, reordered so that
// one 32-bit lane holds four consecutive k of one column, the operand shape of
// VPDPBUSD). Per panel, per block of 32 rows: the 32 f16 column scales (64 bytes),
// then 8 quads t = 0..7 of rows k = 4t..4t+3 of the block:
//   q8_0: 128 bytes; byte 4c + j = q[4t + j][c] + 128 (unsigned), columns c = 0..31.
//   q4_0: 64 bytes; byte 4c + j holds column c (c < 16) in its low nibble and column
//         c + 16 in its high nibble, the stored unsigned quant q + 8 (0..15).
// PackInt8Quads makes it from the row layout, losslessly.
//
// Activations: Int8Rows, M rows of K (a multiple of 32) as ggml's block_q8_0 holds
// them: per block b, d_b = the f16 rounding of amax/127 and quants a = round(x/d)
// in [−127, 127] (QuantizeBlockQ8_0, ggml's quantize_row_q8_0_ref), plus the block's Σa.
//
// Result (every target and the scalar twin alike, bit for bit): for row r and column
// n, with u the stored unsigned weight quant (q8_0: q + 128, q4_0: q + 8) and o its
// offset (128, 8), per block b in ascending order from acc = +0:
//   S_b = Σ_{k in b} u[k][n]·a[k] − o·Σ_{k in b} a[k]    (exact in int32: |S_b| < 2^21)
//   acc = acc + (d_w[b][n]·d_a[b]) · float(S_b)         (each operation rounded to f32)
// d_w·d_a is exact (two 11-bit significands), float(S_b) is exact, so per block there
// are two roundings, and no fused multiply-add anywhere: the scalar target and the
// twin give the same bits as AVX-512. y depends only on the row, the column and K,
// never on M, the panel range or the thread split.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kvrt/simd/compressed_matrix.h"

namespace kvrt::simd {

// M activation rows rounded to q8_0 blocks, row-major: row r's quants at quants + r·k,
// its block scales and sums at scales/sums + r·k/32.
struct Int8Rows {
  int8_t* quants = nullptr;   // [M, K]
  float* scales = nullptr;    // [M, K/32] d of each block: an f16 value as f32
  int32_t* sums = nullptr;    // [M, K/32] Σ of each block's quants
  size_t k = 0;               // K, a multiple of kQuantBlock

  size_t blocks() const { return k / kQuantBlock; }
};

// Row `row` of `out` from x[0..out.k): ggml's quantize_row_q8_0_ref block by block
// (QuantizeBlockQ8_0), the scale kept as the f16 value it stores. Finite inputs.
// QuantizeRow (Highway, dispatched) gives the same bytes as its twin on every target.
void QuantizeRow(const float* x, const Int8Rows& out, size_t row);
void QuantizeRowScalar(const float* x, const Int8Rows& out, size_t row);

// The row-layout q8_0/q4_0 matrix `w` in CompressedLayout::kInt8Quads, into `out`
// (CompressedMatrixBytes(w.type, w.rows, w.cols) bytes, not overlapping w). Lossless:
// the returned view's at() equals w's everywhere.
CompressedMatrixView PackInt8Quads(const CompressedMatrixView& w, uint8_t* out);

// C[r][n] for the rows r of `a` in [first_row, first_row + m) (C row r − first_row at
// c + (r − first_row)·ldc) and the columns n of the panels [panel_begin, panel_end),
// as the header says. `w` is q8_0 or q4_0 in kInt8Quads with w.rows == a.k.
//
// MatMulInt8 (Highway, dispatched at run time; VPDPBUSD by CPUID where AVX-512 VNNI
// exists, which Highway 1.0.3 has no op for): one row (the decode shape) reads one
// panel at a time, a sequential stream with a software prefetch far ahead; several
// rows go in tiles of four rows sharing every weight load. On AVX2 the same integer sums come from VPMADDUBSW
// byte pairs, added in int16 while they cannot saturate and widened by VPMADDWD;
// this needs the activation quants in [−127, 127], which QuantizeRow always gives.
// Elsewhere from byte lanes (shift, mask, 32-bit multiply). Scalar twin: one product
// at a time in ascending k.
void MatMulInt8(const Int8Rows& a, size_t first_row, size_t m, const CompressedMatrixView& w,
                float* c, size_t ldc, size_t panel_begin, size_t panel_end);
void MatMulInt8Scalar(const Int8Rows& a, size_t first_row, size_t m, const CompressedMatrixView& w,
                      float* c, size_t ldc, size_t panel_begin, size_t panel_end);

// True when MatMulInt8 runs VPDPBUSD on this CPU (reported by the benchmarks).
bool Int8DotUsesVnni();

}  // namespace kvrt::simd
