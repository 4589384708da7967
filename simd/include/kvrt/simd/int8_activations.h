// Weights times activations rounded to 8 bits: the opt-in int8-activation path
// (EngineOptions::int8_activations) for q8_0, q4_0, q5_0, q4_1, q5_1, the K-quants
// q2_k, q3_k, q4_k, q5_k and q6_k, and iq4_nl and iq4_xs. Each activation row is rounded to ggml's q8_0 blocks (32 values, one f16
// scale each), and every block's dot product is an exact integer sum. It is LESS
// EXACT than the f32-activation kernels (compressed_matrix.h), whose only rounding
// is the f32 arithmetic: rounding an activation to 8 bits errs by up to half a step
// of its block, amax/254. (llama.cpp rounds the activations of a K-quant product to
// q8_K, one f32 scale per 256 values; a block of 32 has a step no larger than its
// super-block's, so kvrt's rounding errs no more.) In exchange a block of 32 weights
// of one column costs 8 integer multiply-adds of four products each (AVX-512 VNNI
// VPDPBUSD) instead of 32 conversions and 32 FMAs, so the kernels read the weights
// at memory speed.
//
// Weights: a CompressedMatrixView of one of those types in CompressedLayout::kInt8Quads
// (the same blocks, scales, super-block headers and bytes per weight as the row
// layout, each panel stored apart and its quants reordered so that one 32-bit lane
// holds four consecutive k of one column, the operand shape of VPDPBUSD;
// compressed_layout.h has the bytes). PackInt8Quads makes it from the row layout,
// losslessly. The unsigned quant u multiplied is q8_0's q + 128 (stored so), q4_0's q + 8,
// q5_0's, q6_k's and q3_k's q (q − 16, q − 32 and q − 4 being their values), q4_1's,
// q5_1's, q4_k's, q5_k's and q2_k's q, and for iq4_nl and iq4_xs t + 128, t = kvalues_iq4nl[index] in −127..113
// (the index is stored; the kernels look t + 128 up, one byte shuffle per vector).
//
// Activations: Int8Rows, M rows of K (a multiple of 32) as ggml's block_q8_0 holds
// them: per block b, d_b = the f16 rounding of amax/127 and quants a = round(x/d)
// in [−127, 127] (QuantizeBlockQ8_0, ggml's quantize_row_q8_0_ref), plus the Σa of
// the block and of its two halves.
//
// Result (every target and the scalar twin alike, bit for bit): for row r and column
// n, per block b in ascending order from acc = +0, with integer sums
//   S   = Σ_{k in b} u[k][n]·a[k] − o·Σ_{k in b} a[k]   (o: q8_0 and iq4 128, q4_0 8,
//                                                        q5_0 16, else 0)
//   S_h = Σ_{k in half h of b} u[k][n]·a[k] − o·Σ_{k in half h} a[k]  (q6_k 32, q3_k 4,
//                                                                      q2_k 0)
// and the block's f32 scales d_w (q8_0, q4_0, q5_0, iq4_nl; q4_1 and q5_1 with their
// minimum m_w), or its super-block's d, dmin
// and the block's sc, m (sc_0, sc_1 for q6_k's and q3_k's halves, sc_h and m_h for
// q2_k's, from its bytes sc | m << 4; iq4_xs's sc = ls − 32), with Σa_h the Σa of half h:
//   q8_0, q4_0, q5_0, iq4_nl: acc = acc + (d_w·d_a)·float(S)
//   q4_1, q5_1: acc = acc + ((d_w·d_a)·float(S) + (m_w·d_a)·float(Σa))
//   q6_k, q3_k: acc = acc + (d·d_a)·float(sc_0·S_0 + sc_1·S_1)
//   iq4_xs: acc = acc + (d·d_a)·float(sc·S)
//   q4_k, q5_k: acc = acc + ((d·d_a)·float(sc·S) − (dmin·d_a)·float(m·Σa))
//   q2_k: acc = acc + ((d·d_a)·float(sc_0·S_0 + sc_1·S_1) − (dmin·d_a)·float(m_0·Σa_0 + m_1·Σa_1))
// each operation rounded to f32 and no fused multiply-add anywhere, so the scalar
// target and the twin give the same bits as AVX-512. The integers are exact in int32
// and in f32 (|S| < 2^21; sc·S < 2^23, |sc_0·S_0 + sc_1·S_1| ≤ 2·128·65024 < 2^24,
// iq4_xs |sc·S| ≤ 32·(32·127·127) = 16516096 < 2^24, m·Σa < 2^18; q2_k |S_h| ≤ 16·3·127,
// |sc_0·S_0 + sc_1·S_1| ≤ 2·15·6096 = 182880, |m_0·Σa_0 + m_1·Σa_1| ≤ 2·15·2032 = 60960),
// and so are d_w·d_a, m_w·d_a, d·d_a and dmin·d_a (two 11-bit significands): per block
// there are two (q8_0, q4_0, q5_0, q6_k, q3_k, iq4_nl, iq4_xs) or five roundings (q4_1,
// q5_1, q4_k, q5_k, q2_k). y depends only on the row, the column and K, never on M, the panel
// range or the thread split.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kvrt/simd/compressed_matrix.h"

namespace kvrt::simd {

// M activation rows rounded to q8_0 blocks, row-major: row r's quants at quants + r·k,
// its block scales and sums at scales/sums + r·k/32, the sums of its halves of blocks
// (16 quants, the sub-blocks of q6_k, q3_k and q2_k) at half_sums + r·k/16.
struct Int8Rows {
  int8_t* quants = nullptr;     // [M, K]
  float* scales = nullptr;      // [M, K/32] d of each block: an f16 value as f32
  int32_t* sums = nullptr;      // [M, K/32] Σ of each block's quants
  int32_t* half_sums = nullptr; // [M, K/16] Σ of each half block's quants
  size_t k = 0;                 // K, a multiple of kQuantBlock

  size_t blocks() const { return k / kQuantBlock; }
};

// Row `row` of `out` from x[0..out.k): ggml's quantize_row_q8_0_ref block by block
// (QuantizeBlockQ8_0), the scale kept as the f16 value it stores. Finite inputs.
// QuantizeRow (Highway, dispatched) gives the same bytes as its twin on every target.
void QuantizeRow(const float* x, const Int8Rows& out, size_t row);
void QuantizeRowScalar(const float* x, const Int8Rows& out, size_t row);

// Whether `type` has a quad layout: q8_0, q4_0, q5_0, q4_1, q5_1, q2_k, q3_k, q4_k, q5_k,
// q6_k, iq4_nl, iq4_xs (every quantized type).
bool HasInt8Quads(CompressedFormat type);

// The row-layout matrix `w` (HasInt8Quads(w.type)) in CompressedLayout::kInt8Quads, into `out`
// (CompressedMatrixBytes(w.type, w.rows, w.cols) bytes, not overlapping w). Lossless:
// the returned view's at() equals w's everywhere.
CompressedMatrixView PackInt8Quads(const CompressedMatrixView& w, uint8_t* out);

// C[r][n] for the rows r of `a` in [first_row, first_row + m) (C row r − first_row at
// c + (r − first_row)·ldc) and the columns n of the panels [panel_begin, panel_end),
// as the header says. `w` is in kInt8Quads (HasInt8Quads) with w.rows == a.k.
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
