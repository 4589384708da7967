// bf16 weights times activations rounded to bf16: the opt-in bf16-activation path
// (EngineOptions::bf16_activations) for bf16 matrices, on the CPU's bf16 dot-product
// unit where it has one (AVX512_BF16's VDPBF16PS: two bf16 products added into each
// f32 lane per instruction, twice the products of an f32 FMA).
//
// It is LESS EXACT than the default bf16 kernels (compressed_matrix.h), which multiply
// the weights by the f32 activations: each activation is rounded to bf16 (8 significant
// bits, a relative error up to 2^-9), so y moves by up to 2^-9·Σ|x·w| beyond the f32
// rounding both paths share (docs/bf16_activations.md). Every other promise holds: y
// depends only on the row, the column and K, never on M, the panel range or the
// thread split, so a prefill chunked any way and a decode give the same bits.
//
// Weights: a bf16 CompressedMatrixView in CompressedLayout::kBf16Pairs (K even): each
// panel stored apart, K/2 pair rows of 128 bytes; pair row i holds, for the panel's
// columns c = 0..31 in order, one 32-bit lane of two bf16 (bits 0..15: row 2i, bits
// 16..31: row 2i + 1), the operand shape of VDPBF16PS. PackBf16Pairs makes it from the
// row layout; bf16 subnormals become zeros of their sign (VDPBF16PS reads them so),
// every other value is kept.
//
// Activations: Bf16Rows, M rows of K/2 such pairs: x rounded to the nearest bf16 (ties
// to even, F32ToBf16), subnormals flushed to zeros of their sign.
//
// Result (VDPBF16PS's definition, which the kernels and the twin share): for row r and
// column n, from acc = +0, for each pair i in ascending order
//   acc = acc + a[2i+1]·w[2i+1][n],  then  acc = acc + a[2i]·w[2i][n],
// each product exact in f32 (two 8-bit significands) and each sum rounded to nearest
// even. VDPBF16PS also flushes a sum or product below 2^-126 in magnitude to zero; the
// twin does the same with its sums, the portable kernel (CPUs without AVX512_BF16) does
// not, so the three differ only where a partial sum of a row falls below 2^-126.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kvrt/simd/compressed_matrix.h"

namespace kvrt::simd {

// M activation rows rounded to bf16, row-major: row r's pairs at pairs + r·k/2.
struct Bf16Rows {
  uint32_t* pairs = nullptr;  // [M, K/2]: bits 0..15 the even k, 16..31 the odd k
  size_t k = 0;               // K, even

  size_t pairs_per_row() const { return k / 2; }
};

// Row `row` of `out` from x[0..out.k), as the header says. RoundRowToBf16 (Highway,
// dispatched) gives the same bits as its twin on every target.
void RoundRowToBf16(const float* x, const Bf16Rows& out, size_t row);
void RoundRowToBf16Scalar(const float* x, const Bf16Rows& out, size_t row);

// Whether `w` can take the pair layout: bf16 in the row layout with K even.
bool HasBf16Pairs(const CompressedMatrixView& w);

// The row-layout matrix `w` (HasBf16Pairs) in CompressedLayout::kBf16Pairs, into `out`
// (CompressedMatrixBytes(w.type, w.rows, w.cols) bytes, not overlapping w). The
// returned view's at() equals w's except for subnormals, which read as zeros.
CompressedMatrixView PackBf16Pairs(const CompressedMatrixView& w, uint8_t* out);

// C[r][n] for the rows r of `a` in [first_row, first_row + m) (C row r − first_row at
// c + (r − first_row)·ldc) and the columns n of the panels [panel_begin, panel_end),
// as the header says. `w` is in kBf16Pairs with w.rows == a.k.
//
// MatMulBf16: MatMulBf16Amx where the CPU has AMX-BF16 (amx.h: available, allowed, and
// Highway dispatching to an AVX-512 target), else MatMulBf16Vectors. Which one runs is
// fixed for the process, so every row of a session takes the same sums.
void MatMulBf16(const Bf16Rows& a, size_t first_row, size_t m, const CompressedMatrixView& w,
                float* c, size_t ldc, size_t panel_begin, size_t panel_end);

// MatMulBf16Vectors (Highway, dispatched at run time; VDPBF16PS by CPUID where
// AVX512_BF16 exists, which Highway 1.0.3 has no op for): one row (the decode shape)
// streams four panels side by side; several rows go in register tiles sharing every
// weight load. Scalar twin: the pairs one at a time, as above; equal BIT FOR BIT.
void MatMulBf16Vectors(const Bf16Rows& a, size_t first_row, size_t m, const CompressedMatrixView& w,
                       float* c, size_t ldc, size_t panel_begin, size_t panel_end);
void MatMulBf16Scalar(const Bf16Rows& a, size_t first_row, size_t m, const CompressedMatrixView& w,
                      float* c, size_t ldc, size_t panel_begin, size_t panel_end);

// MatMulBf16Amx: the same product on AMX tiles (TDPBF16PS, 16 × 16 f32 tiles, 32 of K
// a step); false, and nothing written, where AmxBf16Available() is false. A row's
// result depends on nothing but the row, as above. Its sums are TDPBF16PS's, whose
// order within a step Intel has described two ways (one accumulator per column taking
// the pairs in turn; or the even and the odd products accumulated apart and added at
// the end), so it is held to the twin by a bound rather than bits, the bound of any
// order of the same K exact products, each sum rounded to nearest f32 (u = 2^-24) and
// sums below 2^-126 flushed:
//   |y − twin| ≤ 2·γ_K·Σ|a·w| + K·2^-125,   γ_K = K·u / (1 − K·u).
bool MatMulBf16Amx(const Bf16Rows& a, size_t first_row, size_t m, const CompressedMatrixView& w,
                   float* c, size_t ldc, size_t panel_begin, size_t panel_end);

// True when MatMulBf16Vectors runs VDPBF16PS on this CPU (reported by the benchmarks).
bool Bf16DotUsesVdpbf16ps();
// True when MatMulBf16 runs MatMulBf16Amx (reported by the benchmarks).
bool Bf16DotUsesAmx();

}  // namespace kvrt::simd
