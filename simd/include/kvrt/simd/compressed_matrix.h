// Weight matrices kept compressed: bf16, f16, q8_0, q4_0, q5_0, q4_1, q5_1, iq4_nl,
// iq4_xs and the K-quants q2_k, q3_k, q4_k, q5_k and q6_k in the column-panel layout of
// the fast matrix kernels, and their
// matrix–vector (decode) and matrix–matrix (prefill) products with f32 activations and
// f32 accumulation.
//
// A matrix W is [rows = K inputs, cols = N outputs], applied as y = x·W like the f32
// kernels (matvec.h, matmul.h). It is stored as ceil(N / 32) column panels of 32
// columns, each panel the K rows of its columns; the columns past N in the last
// panel are zero (their every element dequantizes to +0). Per panel:
//   bf16, f16: K rows of 32 uint16 (64 bytes per row). f16 rows hold columns 0..31
//              in order; bf16 rows interleave the halves of the panel, slot 2i =
//              column i and slot 2i+1 = column i+16, so that one 32-bit lane holds
//              columns i and i+16 and a shift or a mask turns it into two floats.
//   q8_0:      K/32 blocks of 1088 bytes, one per 32 rows: 32 f16 scales d (one per
//              column), then the 32 rows of 32 int8 quants q, row by row.
//   q4_0:      K/32 blocks of 576 bytes: 32 f16 scales, then 32 rows of 16 bytes;
//              byte j of a row holds column j in its low nibble and column j+16 in
//              its high nibble (unsigned quants q in 0..15).
//   q5_0:      K/32 blocks of 704 bytes: q4_0's 32 f16 scales, then 32 rows of 20
//              bytes as q5_k's (below): 16 bytes of the quants' low 4 bits as q4_0's
//              nibbles, then one little-endian uint32 of their high bit, column c at
//              bit c. q = low | high << 4 is in 0..31.
//   q4_1:      K/32 blocks of 640 bytes: a scale area of 32 f16 d and then 32 f16 m
//              (128 bytes), then 32 rows of q4_0's 16 bytes of nibbles (q in 0..15).
//   q5_1:      K/32 blocks of 768 bytes: q4_1's 128-byte scale area, then 32 rows of
//              q5_0's 20 bytes (q = low | high << 4 in 0..31).
//   iq4_nl:    q4_0's blocks (576 bytes) and nibbles; a nibble q indexes ggml's
//              non-linear table kvalues_iq4nl (−127 .. 113) instead of meaning q − 8.
//   iq4_xs:    K/256 super-blocks of 4672 bytes: a header of 32 f16 d (64 bytes), then
//              8 blocks of 32 rows (576 bytes each): 32 int8 block scales sc = ls − 32
//              (−32..31; then 32 unused bytes), then 32 rows of iq4_nl's nibbles.
//   q4_k:      K/256 super-blocks of 4736 bytes: a header of 32 f16 d and 32 f16
//              dmin (128 bytes), then 8 blocks of 32 rows (576 bytes each): the
//              block's 32 scale bytes sc and 32 minimum bytes m (6-bit, 0..63), then
//              32 rows of 16 bytes of nibbles q (0..15) as q4_0's.
//   q5_k:      K/256 super-blocks of 5760 bytes: q4_k's header, then 8 blocks of 32
//              rows (704 bytes each): q4_k's 64-byte scale area, then 32 rows of 20
//              bytes: 16 bytes of the quants' low 4 bits as q4_0's nibbles, then 4
//              bytes of their high bit, one little-endian uint32, column c at bit c.
//              q = low | high << 4 is in 0..31.
//   q6_k:      K/256 super-blocks of 6720 bytes: 32 f16 d (64 bytes), then 8 blocks
//              of 32 rows (832 bytes each): 32 int8 scales sc of the block's first 16
//              rows and 32 of its last 16 rows, then 32 rows of 24 bytes: 16 bytes of
//              the quants' low 4 bits as q4_0's nibbles, then 8 bytes of their high 2
//              bits, two little-endian uint32 (columns 0..15, then 16..31), column c
//              of a word at bits 2c..2c+1. q = low | high << 4 is in 0..63.
//   q3_k:      K/256 super-blocks of 4672 bytes: q6_k's header (32 f16 d) and scale
//              areas (the int8 sc − 32 of ggml's 6-bit sc, per 16 rows), then 32 rows
//              of 16 bytes of nibbles as q4_0's, each holding the whole 3-bit quant q =
//              low 2 bits | high bit << 2 (0..7, nibble bit 3 zero). Not ggml's 3.4375
//              bits: the kernels then decode q3_k as q4_0's nibbles, and the rows cost
//              4 bits a weight instead of 3 (a 2 + 1-bit row layout is not done yet).
//   q2_k:      K/256 super-blocks of 2688 bytes: q4_k's header (32 f16 d, 32 f16 dmin),
//              then 8 blocks of 32 rows (320 bytes each): a 64-byte scale area of
//              ggml's scale bytes as stored, sc | m << 4 (4 bits each), 32 for the
//              block's first 16 rows and 32 for its last 16, then 32 rows of 8 bytes:
//              the 2-bit quants q (0..3) of the panel's 32 columns as one little-endian
//              uint64, column c at bits 2c..2c+1 (no lane order: a row of a group is
//              its W panels' 8 bytes side by side). 2.625 bits per weight, ggml's own.
//              The K-quants keep ggml's two levels of scales: 2.625, 4.5625, 4.625,
//              5.625 and 6.5625 bits per weight (ggml's: 2.625, 3.4375, 4.5, 5.5 and
//              6.5625; the panels keep q4_k's and q5_k's 6-bit scales and minimums a
//              byte each).
// Panels are stored in groups of four (the last group holds the one to three panels
// left over) whose rows are interleaved: a group of W panels keeps row k of its W
// panels side by side (bf16/f16: W × 64 bytes), and for the quantized types, block by
// block, its W scale areas and then each of the block's 32 rows of its W panels side
// by side (and a K-quant super-block starts with its W panels' headers). The
// matrix–vector kernels, which stream four panels at once, then read one sequential
// stream (compressed_layout.h says how much that is worth). The nibbles of a q4_0,
// q5_0, q4_1, q5_1, q4_k, q5_k, q6_k or q3_k row of a group of four (64 bytes) are in
// lane order instead: byte 4j + i holds columns j and j + 16 of the group's panel i, so
// that one 32-bit lane holds column j of all four panels (a q5_0, q5_1, q5_k or q6_k
// row of a group then has its four panels' 4 or 8 high-bit bytes after those 64).
// Bytes per weight are 2, 2, 34/32, 18/32, 22/32, 20/32, 24/32, 148/256, 180/256,
// 210/256, 146/256 and 84/256 (q2_k)
// (plus the padding of the last panel). Every panel is a multiple of 64 bytes, so 64-byte aligned storage
// keeps every panel, block and scale area aligned.
//
// Dequantized element (at(): what the scalar twins and the bf16/f16 kernels multiply
// by; always the value ggml's dequantizer gives): bf16 and f16 widened; q8_0
// float(q)·float(d); q4_0 float(q − 8)·float(d); q5_0 float(q − 16)·float(d); iq4_nl
// float(kvalues_iq4nl[q])·float(d) (all four exact: at most 8 + 11 significant bits);
// iq4_xs (d·sc)·kvalues_iq4nl[q] (exact: 11 + 5 + 7 significant bits, |sc| = 32 a power
// of two);
// q4_1 and q5_1 float(q)·float(d) + float(m) (the product exact: 5 + 11 significant
// bits; the addition rounds once);
// q4_k and q5_k (d·sc)·q − dmin·m, in
// f32 in that order (d·sc, dmin·m and (d·sc)·q are exact: at most 11 + 6 + 5
// significant bits; the subtraction rounds); q2_k the same with its 4-bit sc and m
// and q ≤ 3 (one rounding, the subtraction); q6_k (d·sc)·(q − 32), q3_k
// (d·sc)·(q − 4) with sc the signed scale, both exact. The
// block-quantized kernels sum x·q per block and apply the scales once per block
// (MatVec below).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvrt::simd {

// Compressed types only. (kQ5_K, kQ5_0, kQ3_K, kIQ4_NL, kIQ4_XS, kQ4_1, kQ5_1 and
// kQ2_K came last; the order means nothing else.)
enum class CompressedFormat : uint8_t {
  kBf16,
  kF16,
  kQ8_0,
  kQ4_0,
  kQ4_K,
  kQ6_K,
  kQ5_K,
  kQ5_0,
  kQ3_K,
  kIQ4_NL,
  kIQ4_XS,
  kQ4_1,
  kQ5_1,
  kQ2_K
};

// How the blocks of a q8_0/q4_0 panel order their quants (q5_0, iq4_nl: kRows only). kRows is the
// layout above, the only one of bf16/f16 and the one every kernel of this header takes. kInt8Quads
// (int8_activations.h) orders four consecutive rows of a column into one 32-bit lane
// for the int8-activation kernels, and kBf16Pairs (bf16_activations.h) two consecutive rows
// of a bf16 column for the bf16-activation kernels; at() and GatherColumn read all three.
enum class CompressedLayout : uint8_t { kRows, kInt8Quads, kBf16Pairs };

// Rows (along K) of one q8_0 / q4_0 block, i.e. of one scale, and of one block of the
// K-quants' panel layout.
inline constexpr size_t kQuantBlock = 32;
// Rows of one K-quant super-block (one d and dmin per column).
inline constexpr size_t kSuperBlock = 256;
// Columns per panel of every compressed type (the f32 kernels' kPanelWidth<float>).
inline constexpr size_t kCompressedPanelWidth = 32;

// "bf16", "f16", "q8_0", "q4_0", "q4_k", "q6_k", "q5_k", "q5_0", "q3_k", "iq4_nl",
// "iq4_xs", "q4_1", "q5_1", "q2_k".
const char* CompressedFormatName(CompressedFormat type);

// Rows (along K) a matrix in `type` must be a multiple of: bf16/f16 1,
// q8_0/q4_0/q5_0/q4_1/q5_1/iq4_nl 32, the K-quants 256.
size_t CompressedRowMultiple(CompressedFormat type);
// True when a [rows=K, cols=N] matrix can be stored in `type`
// (rows % CompressedRowMultiple(type) == 0).
bool FitsCompressedFormat(CompressedFormat type, size_t rows);

// Bytes of the packed compressed storage of a [K, N] matrix (column panels of 32 columns,
// the last panel zero-padded); requires FitsCompressedFormat. Returns SIZE_MAX on overflow.
size_t CompressedMatrixBytes(CompressedFormat type, size_t rows, size_t cols);

// Bytes of one tensor row (K elements of one output column) as ggml stores it in a GGUF
// file: 2·K for bf16/f16, 34·K/32 for q8_0, 18·K/32 for q4_0 and iq4_nl, 22·K/32 for
// q5_0, 20·K/32 for q4_1, 24·K/32 for q5_1, 144·K/256 for q4_k, 176·K/256 for q5_k, 210·K/256 for q6_k, 110·K/256 for q3_k,
// 136·K/256 for iq4_xs, 84·K/256 for q2_k; requires FitsCompressedFormat.
size_t GgmlRowBytes(CompressedFormat type, size_t rows_k);

struct CompressedMatrixView {
  CompressedFormat type = CompressedFormat::kBf16;
  const uint8_t* data = nullptr;  // 64-byte aligned, CompressedMatrixBytes(type, rows, cols)
  size_t rows = 0;                // K (inputs)
  size_t cols = 0;                // N (outputs)
  CompressedLayout layout = CompressedLayout::kRows;

  size_t panels() const { return (cols + kCompressedPanelWidth - 1) / kCompressedPanelWidth; }
  // Bytes of one panel (CompressedMatrixBytes of a 32-column matrix).
  size_t panel_bytes() const;
  // Panel p of the kInt8Quads or kBf16Pairs layout, whose panels are stored apart. (In kRows a panel's
  // rows are interleaved with its group's: compressed_layout.h, RowsOfPanel.)
  const uint8_t* panel(size_t p) const { return data + p * panel_bytes(); }
  // The dequantized element, exactly as the kernels use it. Defined for every n in
  // [0, panels()·32): the padding columns give +0.
  float at(size_t k, size_t n) const;
};

// Quantize + pack a dense f32 matrix into `out` (CompressedMatrixBytes(type, rows, cols)
// bytes; requires FitsCompressedFormat). `source` is [K, N] row-major, or [N, K] row-major when
// source_is_transposed (like simd::PackMatrix). Quantization follows ggml's reference
// quantizers bit for bit, along K (one block = 32, or for the K-quants 256, consecutive k
// of one column, as a ggml tensor row of K elements is quantized): see QuantizeBlock*,
// F32ToBf16 and F32ToF16 below. `out` must not overlap `source`.
void PackCompressed(CompressedFormat type, const float* source, size_t rows, size_t cols,
                    bool source_is_transposed, uint8_t* out);

// Repack a tensor as stored in a GGUF file, LOSSLESSLY (same scales, same quants): ggml data
// is N rows of K elements each (ne0 = K contiguous); bf16/f16: K uint16 per row; q8_0: K/32
// blocks of {f16 d; int8 qs[32]} (34 bytes); q4_0: K/32 blocks of {f16 d; uint8 qs[16]} (18
// bytes), element j of a block = (qs[j] & 0xF) − 8 for j < 16, (qs[j−16] >> 4) − 8 for
// j ≥ 16; q5_0: K/32 blocks of {f16 d; uint8 qh[4]; uint8 qs[16]} (22 bytes), element j
// = q4_0's nibble | (bit j of qh as a little-endian uint32) << 4, less 16; q4_1: K/32
// blocks of {f16 d; f16 m; uint8 qs[16]} (20 bytes), element j = q·d + m with q4_0's
// nibble q; q5_1: K/32 blocks of {f16 d; f16 m; uint8 qh[4]; uint8 qs[16]} (24 bytes),
// q as q5_0's, element j = q·d + m; iq4_nl: q4_0's
// 18-byte blocks, element j = kvalues_iq4nl[nibble j]·d; iq4_xs: K/256 blocks of {f16 d;
// u16 scales_h; u8 scales_l[4]; u8 qs[128]} (136 bytes), sub-block ib of 32 scaled by
// d·(ls − 32), ls = low 4 bits of scales_l[ib/2] (>> 4 for odd ib) | 2 bits of scales_h
// at 2·ib << 4, its qs[16·ib..] as iq4_nl's;
// q4_k: K/256 blocks of {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]} (144 bytes);
// q5_k: K/256 blocks of {f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]} (176
// bytes); q6_k: K/256 blocks of {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d} (210
// bytes); q3_k: K/256 blocks of {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d} (110
// bytes); q2_k: K/256 blocks of {u8 scales[16]; u8 qs[64]; f16 d; f16 dmin} (84 bytes);
// the bit order of ggml's dequantize_row_q4_K / _q5_K / _q6_K / _q3_K / _q2_K. Requires
// FitsCompressedFormat(type, rows_k). `out` must not overlap `ggml_rows`.
// PackCompressed(type, W) == RepackGgml(type, ggml quantization of Wᵀ's rows), byte for byte.
void RepackGgml(CompressedFormat type, const uint8_t* ggml_rows, size_t rows_k, size_t cols_n,
                uint8_t* out);

// Column n (< cols) dequantized into out[0..K) (the embedding lookup of a transposed token
// table): out[k] = w.at(k, n).
void GatherColumn(const CompressedMatrixView& w, size_t n, float* out);

// ggml's reference block quantizers (quantize_row_q8_0_ref / _q4_0_ref / _q5_0_ref), one
// block of 32 values into ggml's bytes (little-endian f16 d first):
//   q8_0: d = amax/127, id = d ? 1/d : 0, q = roundf(x·id)                  (34 bytes)
//   q4_0: m = the first element of largest |x| (sign kept), d = m/−8, id = d ? 1/d : 0,
//         q = min(15, (int8_t)(x·id + 8.5f)), qs[j] = q[j] | q[j+16] << 4  (18 bytes)
//   q5_0: q4_0 with d = m/−16 and q = min(31, (int8_t)(x·id + 16.5f)); the low 4 bits
//         in qs as q4_0's, the fifth bit of element j at bit j of qh     (22 bytes)
//   q4_1 (quantize_row_q4_1_ref): min and max over the block (from FLT_MAX and
//         −FLT_MAX), d = (max − min)/15, id = d ? 1/d : 0, m = min, q = min(15,
//         (int8_t)((x − min)·id + 0.5f)); d, m, then qs as q4_0's        (20 bytes)
//   q5_1 (quantize_row_q5_1_ref): q4_1 with d = (max − min)/31 and q ≤ 31; d, m, qh
//         as q5_0's, qs                                                  (24 bytes)
// d is rounded to f16 only when stored: the quants use the f32 id (and q4_1/q5_1 the
// f32 min). Finite inputs.
void QuantizeBlockQ8_0(const float* x, uint8_t* out);
void QuantizeBlockQ4_0(const float* x, uint8_t* out);
void QuantizeBlockQ5_0(const float* x, uint8_t* out);
void QuantizeBlockQ4_1(const float* x, uint8_t* out);
void QuantizeBlockQ5_1(const float* x, uint8_t* out);

// ggml's iq4_nl quantizer as llama-quantize runs it (quantize_iq4_nl: quantize_row_iq4_nl_impl
// with ntry 7, no importance matrix; quantize_row_iq4_nl_ref's ntry −1 skips the search),
// one block of 32 values into ggml's 18 bytes, the same float operations in the same
// order: weights x², m the first element of largest |x| (sign kept); an all-but-zero
// block (|m| < 1e−15) gets d = 0 and every index 8 (the table's nearest to 0). Else
// d = m/127 gives indices (the nearest table entry to x/d, ties up) and the weighted
// least-squares scale Σwqx/Σwq²; the trial scales (t − 127)/m, t = −7..7, each keep
// theirs if they fit better (Σwqx² > best·Σwq²). The indices are then taken again
// against 1/d of the chosen d (f32, before its f16 rounding). Finite inputs.
void QuantizeBlockIQ4_NL(const float* x, uint8_t* out);
// ggml's quantize_iq4_xs (the same impl on a super-block of 256, no importance matrix):
// each block of 32's scale as iq4_nl's, then d = −m/32 of the scale m of largest
// magnitude (first, sign kept), ls = clamp(nearest_int(s/d), −32, 31) + 32 per block,
// and the indices against 1/(d·(ls − 32)) (f32, before d's f16 rounding); 136 bytes.
void QuantizeBlockIQ4_XS(const float* x, uint8_t* out);

// ggml's reference K-quant quantizers (quantize_row_q2_K_ref / _q3_K_ref / _q4_K_ref / _q5_K_ref /
// _q6_K_ref, no importance matrix), one super-block of 256 values into ggml's bytes,
// the same float operations in the same order (ggml compiles them without fused
// multiply-adds):
//   q4_k: per 32 values a scale and a minimum fitted by ggml's weighted search
//         (make_qkx2_quants, 15 levels), both quantized to 6 bits against the largest
//         of each (d = max_scale/63, dmin = max_min/63), then q = clamp(round((x +
//         dmin·m)/(d·sc)), 0, 15)                                            (144 bytes)
//   q5_k: q4_k with 31 levels (and the search's own trial scales), q = clamp(…, 0, 31),
//         its fifth bit in qh                                                (176 bytes)
//   q6_k: per 16 values a scale by ggml's search (make_qx_quants, 32 levels, weights
//         x²), the 16 scales quantized to int8 against the largest in magnitude
//         (d = −max/128 as f16), then q = clamp(round(x/(d·sc)), −32, 31) + 32 (210 bytes)
//   q3_k: per 16 values a signed scale by ggml's search (make_q3_quants: levels −4..3,
//         weights x², up to 5 passes moving single levels), the 16 scales quantized
//         to 6 bits against the largest in magnitude (d = −max/32 as f16, sc − 32 in
//         −32..31), then q = clamp(round(x/(d·(sc − 32))), −4, 3) + 4       (110 bytes)
//   q2_k: per 16 values a scale and a minimum by ggml's search (make_qkx2_quants, 3
//         levels, weights |x|, absolute errors, trial steps −0.5 + 0.1·i, i ≤ 15),
//         both quantized to 4 bits against the largest of each (d = max_scale/15,
//         dmin = max_min/15), then q = clamp(round((x + dmin·m)/(d·sc)), 0, 3)
//         (84 bytes)
// Finite inputs.
void QuantizeBlockQ2_K(const float* x, uint8_t* out);
void QuantizeBlockQ3_K(const float* x, uint8_t* out);
void QuantizeBlockQ4_K(const float* x, uint8_t* out);
void QuantizeBlockQ5_K(const float* x, uint8_t* out);
void QuantizeBlockQ6_K(const float* x, uint8_t* out);

// Half-precision conversions. F32ToF16: IEEE round to nearest even (overflow → ±inf,
// NaN → quiet NaN). F32ToBf16: round to nearest even like ggml_fp32_to_bf16 (NaN made
// quiet, its top payload bits kept). The widening conversions are exact.
uint16_t F32ToF16(float value);
float F16ToF32(uint16_t bits);
uint16_t F32ToBf16(float value);
float Bf16ToF32(uint16_t bits);
// `value` rounded once to the nearest f16 value (ties to even; beyond ±65504 by half
// a step or more: ±inf; NaN stays NaN), as f64: the reference engine's f16 KV cache.
// For an f32 input it equals F16ToF32(F32ToF16(value)).
double RoundToF16(double value);
// The same for bf16 (beyond the largest bf16, (2 − 2^−7)·2^127, by half a step or
// more: ±inf): the reference engine's bf16 KV cache. For an f32 input it equals
// Bf16ToF32(F32ToBf16(value)).
double RoundToBf16(double value);

// y = x·W for the columns of the panels [panel_begin, panel_end), i.e. y[n] for n in
// [panel_begin·32, min(panel_end·32, N)), and nothing else (the engine splits the panels
// over threads). Same shapes and semantics as simd::MatVec for f32 (matvec.h). This and
// MatMul below take CompressedLayout::kRows only.
//
// Scalar twin: each panel row is dequantized (at()), then exactly the f32 twin's order:
// y[n] = Σ_k x[k]·W[k][n] from 0 in ascending k, every product rounded before it is added.
//
// MatVec (Highway, dispatched at run time: AVX3, AVX2, scalar).
//   Lanes:     f32 activations and accumulators; weights as stored.
//   Method:    each panel row is decoded in registers (compressed_rows-inl.h: bf16 by a
//              shift or a mask, f16 by F16C, q8_0 by int8→f32, q4_0 by a nibble→f32
//              table lookup on AVX-512), four panels streamed together as in the f32
//              MatVec. Per column:
//              bf16, f16: the exact form, ONE chain of fused multiply-adds of
//                x[k]·at(k, n) over k = 0..K−1 ascending from 0: bit for bit the f32
//                MatVec (matvec.h) on the dequantized matrix.
//              q8_0, q4_0, q5_0: block-scaled accumulation. For each block b of 32
//                rows in ascending order, P_b = one FMA chain from 0 over its rows of
//                x[k]·q (q8_0: q; q4_0: q − 8; q5_0: q − 16; exact small integers), then
//                acc = fma(d_b, P_b, acc) from acc = 0. One multiply per 32 weights
//                instead of one per weight. The exact form (one chain of x·(q·d)) is
//                bound by the decode arithmetic, not by memory, on AVX-512, and takes
//                clearly more CPU time than this form from cache, q4_0 the most
//                (bench/kernels/compressed_bench.cc; figures in
//                docs/performance/design_measurements.md).
//              q4_1, q5_1: block-scaled with a block minimum: per block of 32 rows P_b =
//                one FMA chain from 0 of x[k]·q (q itself, 0..15 or 0..31, exact), then
//                acc = fma(d_b, P_b, acc) and acc = fma(m_b, S_b, acc), with S_b = Σ x[k]
//                over the block in q4_k's fixed tree (below), from acc = 0: Σ x·(q·d + m)
//                = d·Σ x·q + m·Σ x, two multiply-adds per block and column.
//              q2_k, q3_k, q4_k, q5_k, q6_k: block-scaled accumulation by sub-block
//                (q4_k, q5_k: 32 rows, q2_k, q3_k, q6_k: 16), in ascending order from
//                acc = 0: P_s = one FMA chain from 0 over the sub-block's rows of
//                x[k]·q (q2_k, q4_k, q5_k: q; q6_k: q − 32; q3_k: q − 4), then
//                q3_k, q6_k: acc = fma(d·sc_s, P_s, acc);
//                q2_k, q4_k, q5_k: acc = fma(d·sc_s, P_s, acc), then acc = acc −
//                (dmin·m_s)·S_s fused, with S_s = Σ x[k] over the sub-block's 32
//                (q2_k: 16) rows in a fixed tree, the same for every column and every
//                target: t_j = x_j + x_{j+16} (j < 16), then t_j + t_{j+8} (j < 8),
//                + 4, + 2, + 1 (q2_k: from t_j = x_j + x_{j+8}, j < 8).
//                (d·sc and dmin·m are exact in f32: 11-bit significands times
//                8-bit integers.) Since Σ_k x·((d·sc)·q − dmin·m) = (d·sc)·Σ x·q −
//                (dmin·m)·Σ x per sub-block, two multiply-adds per sub-block and column
//                replace a multiply and a subtraction per weight.
//              Either way y[n] depends only on x, column n and K (not on the panel
//              range, the thread split or M), and equals the rows of MatMul bit for bit
//              on the same target.
//   Max error: with Σ = Σ_k|x[k]·at(k, n)| and ε = FLT_EPSILON (u = ε/2):
//              bf16, f16: |y[n] − twin| ≤ (K + 2)·ε·Σ (+ K·denorm_min): both sum the
//                same exact products, the twin rounding each product.
//              q8_0, q4_0: |y[n] − twin| ≤ (K + K/32 + 34)·(ε/2)·Σ
//                (+ (K + K/32)·denorm_min): the P_b err by ≤ γ_32·Σ_b, the block chain
//                by ≤ γ_{K/32}·Σ, the twin by ≤ γ_K·Σ (γ_n = n·u/(1 − n·u)); for
//                K ≥ 32 this is within the f32 kernels' (K + 2)·ε·Σ.
//              q5_0: as q4_0, (K + K/32 + 34)·(ε/2)·Σ (+ (K + K/32)·denorm_min): the
//                same operations, q − 16 an exact integer in −16..15, and at() =
//                float(q − 16)·float(d) exact (5 + 11 significant bits), so the twin
//                sums the same exact products.
//              q4_1, q5_1: as q4_k (below), on Σ' = Σ_k |x[k]|·(|d·q| + |m|) ≥ Σ:
//                |y[n] − twin| ≤ (K + K/16 + 40)·(ε/2)·Σ' (+ (K + K/16)·denorm_min).
//                Derivation: x·q is exact, so P_b errs by ≤ γ_32·Σ_b|x·q| and d·P_b by
//                one more u; S_b (a tree of depth 5) by ≤ γ_5·Σ_b|x|, times |m|; the
//                2·K/32 fused steps of the block chain by ≤ γ_{K/16}·Σ'; the twin by
//                ≤ γ_K·Σ over at() = q·d + m, which (q·d exact) rounds once, ≤ u·Σ'.
//                The minimum's term is why the bound is on Σ' and not Σ: where q·d and
//                m cancel, Σ is small but both sums are not.
//              iq4_nl: as q4_0, (K + K/32 + 34)·(ε/2)·Σ (+ (K + K/32)·denorm_min).
//                Derivation: the kernel sums x[k]·t per block with t = kvalues_iq4nl[q]
//                (the table decoded exactly: |t| ≤ 127 is an integer of ≤ 7 bits), so
//                P_b errs by ≤ γ_32·Σ_b |x·t|, and |d|·Σ_b |x·t| = Σ_b |x·at()| because
//                at() = float(t)·float(d) is exact (≤ 7 + 11 significant bits): the
//                table's range (127 in place of q4_0's 8) scales P_b and Σ alike and
//                so drops out of the relative bound, which is q4_0's term for term.
//              iq4_xs: the same, (K + K/32 + 34)·(ε/2)·Σ (+ (K + K/32)·denorm_min):
//                per block of 32 the scale is d·sc (an exact product), the sums are
//                iq4_nl's, and at() = (d·sc)·t is exact.
//              q6_k, q3_k: |y[n] − twin| ≤ (K + K/16 + 18)·(ε/2)·Σ
//                (+ (K + K/16)·denorm_min), as q8_0 with sub-blocks of 16: the products
//                x·(q − 4) and the scales d·sc_s are exact as q6_k's, so the same
//                three chains (P_s ≤ γ_16, the K/16 block steps ≤ γ_{K/16}, the twin
//                ≤ γ_K) bound it.
//              q4_k: the twin sums x·at(), where at() is (d·sc)·q − dmin·m rounded once,
//                and the kernel the two terms apart, so the bound is on
//                Σ' = Σ_k |x[k]|·(|d·sc·q| + |dmin·m|) ≥ Σ, which can exceed Σ where
//                the terms cancel: |y[n] − twin| ≤ (K + K/16 + 40)·(ε/2)·Σ'
//                (+ (K + K/16)·denorm_min): P_s errs by ≤ γ_32, S_s by ≤ γ_5, the
//                chain of 2·K/32 fused steps by ≤ γ_{K/16}, the twin by ≤ γ_K, and the
//                rounding of at() by ≤ u, each times Σ'.
//              q5_k: as q4_k, (K + K/16 + 40)·(ε/2)·Σ' (+ (K + K/16)·denorm_min): the
//                same operations, and q ≤ 31 keeps (d·sc)·q exact (≤ 22 significant
//                bits), so at() still rounds once.
//              q2_k: as q4_k with sub-blocks of 16: |y[n] − twin| ≤ (K + K/8 + 24)·(ε/2)·Σ'
//                (+ (K + K/8)·denorm_min). Derivation: d·sc (11 + 4 bits), (d·sc)·q
//                (q ≤ 3, + 2 bits) and dmin·m are exact, so at() rounds once (the
//                subtraction, ≤ u); P_s errs by ≤ γ_16, S_s (a tree of depth 4) by
//                ≤ γ_4, the chain of 2·K/16 fused steps by ≤ γ_{K/8}, the twin by
//                ≤ γ_K, each times Σ' (Σ' as q4_k's): K + K/8 + 16 + 4 + 1, rounded up
//                for the γ's second-order terms as q4_k's 38 to 40.
//              The scalar target has no FMA: bf16/f16 equal the twin there.
void MatVec(const CompressedMatrixView& w, const float* x, float* y, size_t panel_begin,
            size_t panel_end);
void MatVecScalar(const CompressedMatrixView& w, const float* x, float* y, size_t panel_begin,
                  size_t panel_end);

// C = A·W for prefill: A is [M, K] row-major with row stride lda ≥ K, C is [M, N] with row
// stride ldc ≥ N; writes C[m][n] for every m < M and the columns n of the panels
// [panel_begin, panel_end), and nothing else. Same semantics as simd::MatMul (matmul.h).
//
// Scalar twin: row by row MatVecScalar.
//
// MatMul (Highway, dispatched at run time).
//   Method:    the f32 MatMul's loop nest (matmul.h). Each panel's K block (256 rows) is
//              decoded once per M block (256 rows of A) into a 33 KiB stack tile (f32,
//              f32 panel layout; for the quantized types the integers and the column
//              scales per (sub-)block, for q2_k, q4_k and q5_k also dmin·m) and reused by every row
//              tile. bf16/f16 run the f32 register-blocked micro-kernel (AVX-512: 8
//              rows × 32 columns) on the dequantized values, so C is the f32 MatMul on
//              the dequantized matrix bit for bit; the quantized types a block-scaled
//              micro-kernel (AVX-512: 6 rows × 32 columns, a partial sum and an
//              accumulator per element) doing MatVec's arithmetic (q2_k, q4_k and q5_k with S_s of
//              each row computed once per row and K block). Either way
//              every row equals MatVec of that row bit for bit on the same target,
//              independent of M, the panel range and the thread split.
//   Max error: as MatVec, per element with A's row as x.
//   Range:     as MatVec; any M ≥ 0.
//   Aliasing:  C must not overlap A or W.
void MatMul(const float* a, size_t lda, size_t m, const CompressedMatrixView& w, float* c,
            size_t ldc, size_t panel_begin, size_t panel_end);
void MatMulScalar(const float* a, size_t lda, size_t m, const CompressedMatrixView& w, float* c,
                  size_t ldc, size_t panel_begin, size_t panel_end);

}  // namespace kvrt::simd
