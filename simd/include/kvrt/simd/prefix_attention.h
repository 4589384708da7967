// Causal attention of one query row over its whole prefix, in an order that
// depends only on that row's own problem (batch-invariant attention).
//
//   s_p   = dot(q, key_p) · scale                   p = 0 .. n−1
//   m     = max_p s_p
//   e_p   = exp(s_p − m)
//   out_j = (Σ_p e_p · value_p[j]) · (1 / Σ_p e_p)
//
// The prefix is given as two segments (committed cache rows, then the step's own
// new rows): key_p and value_p are first.keys/values + p·first.stride for
// p < first.count, else second.* + (p − first.count)·second.stride. How the prefix
// is split between the segments never changes a bit of the result, and neither
// does anything else but (q, keys, values, n, head_width, scale): the prefill of
// a prompt, its chunks, and its decode steps all reduce in the same order.
//
// Scratch: the scores of the whole prefix, in tiles of kPrefixAttentionTile, plus
// 2·head_width accumulators (PrefixAttentionScratch(head_width, n)). Every key is
// read and scored once: the first pass keeps the scores it takes the max of, and
// the second makes the exps and the value mix of them tile by tile; the exp sum
// and the value accumulators carry across tiles, so the arithmetic is the one-tile
// arithmetic. (Scores for a prefix the size of the context, 4 bytes a position, are
// a sliver of the K/V rows the same context holds: 2·head_width·layers elements a
// position and head group.)
//
// Scalar twin: scores with DotScalar·scale, max, e_p = exp(s_p − m), the sum and
// each column accumulated from 0 in ascending p, out = acc / sum.
//
// K/V stored as f16 or bf16 (PrefixSegment<Half> or <Bf16>, a 16-bit KV cache): the
// same formula, with f32 queries, scores and accumulators, on the stored values
// widened to f32 (exact for both), each element as the kernel loads it: no widening
// copy of the prefix. The twin widens each row and runs the f32 twin's arithmetic,
// so the f32 bound below holds with key_p and value_p the widened values.
//
// K/V stored as q8_0 (PrefixSegment<Q8>, a q8_0 KV cache): the same again, each
// element loaded as quant·d, which f32 holds exactly (an 8-bit integer times an
// f16); the twin dequantizes each row and runs the f32 twin, so the f32 bound holds
// with key_p and value_p the dequantized values.
//
// AttendPrefix (Highway, dispatched at run time):
//   Lanes:     float (K/V float, f16, bf16 or q8_0), double.
//   Method:    scores as AttentionScores (one FMA chain per key over head_width,
//              then a lane reduction); exps with hwy/contrib/math Exp (≤ 1 ULP);
//              the exp sum in one vector accumulator (lane k sums the e_p with
//              p ≡ k mod lanes, in ascending p), reduced at the end; each output
//              column in two FMA chains (even p, odd p), added at the end; one
//              multiply by the rounded reciprocal of the sum.
//   Max error: with σ = max_p |scale|·(h + 2)·ε·Σ_i|q_i·key_p[i]| (score error),
//              w_p = e_p/Σe (the twin's weights) and A_j = Σ_p w_p·|value_p[j]|:
//              |out_j − twin_j| ≤ (4σ + (2n + 8)·ε)·A_j + n·denorm_min
//              (score errors shift the exps by at most a factor e^{2σ} relative to
//              each other; the two sums of n positive or mixed terms give the
//              (2n)·ε; the exps, the reciprocal and the products the rest).
//   Range:     finite inputs; n = first.count + second.count ≥ 1; head_width ≥ 0.
//   Aliasing:  out and scratch must not overlap each other or the inputs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvrt::simd {

// One IEEE 754 binary16 K/V element, as stored (F32ToF16's bits,
// compressed_matrix.h); a distinct type so that the f16 kernels are overloads.
struct Half {
  uint16_t bits;
};

// One bfloat16 K/V element, as stored (F32ToBf16's bits): the top half of an f32.
struct Bf16 {
  uint16_t bits;
};

// One q8_0 K/V element (llama.cpp's q8_0 cache type): an int8 quant in a block of
// kQ8KvBlock along the head, the block's value quant·d with one f16 scale d. A
// buffer of q8_0 rows keeps its quants in one array and their scales in another,
// scales[i / kQ8KvBlock] the scale of quants[i]; a row takes Q8KvRowQuants(head_width)
// quants (whole blocks, the last one zero-padded), so every row, and every vector of
// up to 32 lanes that starts at a multiple of its lane count, lies in whole blocks.
struct Q8 {
  int8_t quant;
};
inline constexpr size_t kQ8KvBlock = 32;
inline constexpr size_t Q8KvRowQuants(size_t head_width) {
  return (head_width + kQ8KvBlock - 1) / kQ8KvBlock * kQ8KvBlock;
}

// Where q8_0 elements are read from: `at` an element of a buffer whose quants start
// at `origin`, with that buffer's scales. Advancing it moves `at` only.
struct Q8Rows {
  const Q8* at = nullptr;
  const Q8* origin = nullptr;
  const Half* scales = nullptr;

  Q8Rows operator+(size_t elements) const { return {at + elements, origin, scales}; }
  // The f16 bits of the scale of the block `at` lies in.
  uint16_t scale_bits() const { return scales[static_cast<size_t>(at - origin) / kQ8KvBlock].bits; }
  // The element's value, quant·scale (exact in f32).
  float value() const;
};

// How a kernel reaches a K/V element of type K: a pointer, or for q8_0 a Q8Rows.
template <class K>
struct KvPointerOf {
  using type = const K*;
};
template <>
struct KvPointerOf<Q8> {
  using type = Q8Rows;
};
template <class K>
using KvPointer = typename KvPointerOf<K>::type;

inline constexpr size_t kPrefixAttentionTile = 1024;  // scores per exp and mix pass

// Score elements a call over a prefix of `prefix` rows keeps: whole tiles, at least one.
inline constexpr size_t PrefixAttentionScores(size_t prefix) {
  const size_t tiles = (prefix + kPrefixAttentionTile - 1) / kPrefixAttentionTile;
  return (tiles == 0 ? 1 : tiles) * kPrefixAttentionTile;
}

// Elements of scratch one AttendPrefix call over a prefix of up to `max_prefix`
// rows needs (the scores first, then the accumulators).
inline constexpr size_t PrefixAttentionScratch(size_t head_width, size_t max_prefix) {
  return PrefixAttentionScores(max_prefix) + 2 * head_width;
}

template <class T>
struct PrefixSegment {
  KvPointer<T> keys{};
  KvPointer<T> values{};
  size_t stride = 0;  // elements between consecutive rows (quants for q8_0)
  size_t count = 0;
};

// Consecutive query rows of one head, each over its own causal prefix (a run's
// prefill): query r = 0 .. rows−1 at q + r·q_stride sees the first n − (rows − 1 − r)
// prefix rows, n = first.count + second.count ≥ rows, and writes out + r·out_stride.
// Each query's result is AttendPrefix's on its own prefix, bit for bit: groups of
// kPrefixAttentionRows queries share only the loads of the K and V rows they all see
// (a quarter of the key and of the value traffic of one call per query), and run
// every accumulation, reduction and exp as a lone query does; a prefix longer than
// kPrefixAttentionTile is walked in the lone query's tiles. Up to
// PrefixAttentionGroupsAtOnce(head_width, n) groups walk the prefix together, tile by
// tile, so that a tile of K (then of V) is read from memory once and served from the
// cache to every group (a long prompt's K/V rows of a head outgrow L2: 2 MiB at 4,096
// f32 rows of 64); each group keeps its own scores and accumulators, so this changes
// no bit either. The last rows % kPrefixAttentionRows queries run one at a time.
// Scratch: PrefixAttentionRowsScratch(head_width, n) elements.
// Scalar twin: AttendPrefixScalar of every query over its own prefix. The tests
// hold AttendPrefixRows to AttendPrefix bit for bit, and AttendPrefix to that twin
// within the bound above, so the bound is AttendPrefix's.
inline constexpr size_t kPrefixAttentionRows = 4;
// Queries an engine hands AttendPrefixRows at once in a prefill (its task of one head).
inline constexpr size_t kPrefixAttentionBlockRows = 64;
// Scratch elements the groups walking together may take (1 MiB of f32): their scores
// of the prefix stay in L2 beside the K/V tile.
inline constexpr size_t kPrefixAttentionGroupScratch = size_t{1} << 18;
inline constexpr size_t PrefixAttentionGroupsAtOnce(size_t head_width, size_t prefix) {
  const size_t per_group = kPrefixAttentionRows * PrefixAttentionScratch(head_width, prefix);
  const size_t fit = kPrefixAttentionGroupScratch / per_group;
  const size_t most = kPrefixAttentionBlockRows / kPrefixAttentionRows;
  return fit < 1 ? 1 : (fit > most ? most : fit);
}
// Enough for any prefix of up to max_prefix rows: groups × their scratch is at most
// the budget when more than one group fits in it, one group's scratch otherwise.
inline constexpr size_t PrefixAttentionRowsScratch(size_t head_width, size_t max_prefix) {
  const size_t one_group = kPrefixAttentionRows * PrefixAttentionScratch(head_width, max_prefix);
  return one_group > kPrefixAttentionGroupScratch ? one_group : kPrefixAttentionGroupScratch;
}

void AttendPrefixScalar(const float* q, PrefixSegment<float> first, PrefixSegment<float> second,
                        size_t head_width, float scale, float* scratch, float* out);
void AttendPrefixScalar(const double* q, PrefixSegment<double> first,
                        PrefixSegment<double> second, size_t head_width, double scale,
                        double* scratch, double* out);
void AttendPrefixScalar(const float* q, PrefixSegment<Half> first, PrefixSegment<Half> second,
                        size_t head_width, float scale, float* scratch, float* out);
void AttendPrefixScalar(const float* q, PrefixSegment<Bf16> first, PrefixSegment<Bf16> second,
                        size_t head_width, float scale, float* scratch, float* out);
void AttendPrefixScalar(const float* q, PrefixSegment<Q8> first, PrefixSegment<Q8> second,
                        size_t head_width, float scale, float* scratch, float* out);

void AttendPrefix(const float* q, PrefixSegment<float> first, PrefixSegment<float> second,
                  size_t head_width, float scale, float* scratch, float* out);
void AttendPrefix(const double* q, PrefixSegment<double> first, PrefixSegment<double> second,
                  size_t head_width, double scale, double* scratch, double* out);
void AttendPrefix(const float* q, PrefixSegment<Half> first, PrefixSegment<Half> second,
                  size_t head_width, float scale, float* scratch, float* out);
void AttendPrefix(const float* q, PrefixSegment<Bf16> first, PrefixSegment<Bf16> second,
                  size_t head_width, float scale, float* scratch, float* out);
void AttendPrefix(const float* q, PrefixSegment<Q8> first, PrefixSegment<Q8> second,
                  size_t head_width, float scale, float* scratch, float* out);

void AttendPrefixRows(const float* q, size_t q_stride, size_t rows, PrefixSegment<float> first,
                      PrefixSegment<float> second, size_t head_width, float scale, float* scratch,
                      float* out, size_t out_stride);
void AttendPrefixRows(const double* q, size_t q_stride, size_t rows, PrefixSegment<double> first,
                      PrefixSegment<double> second, size_t head_width, double scale,
                      double* scratch, double* out, size_t out_stride);
void AttendPrefixRows(const float* q, size_t q_stride, size_t rows, PrefixSegment<Half> first,
                      PrefixSegment<Half> second, size_t head_width, float scale, float* scratch,
                      float* out, size_t out_stride);
void AttendPrefixRows(const float* q, size_t q_stride, size_t rows, PrefixSegment<Bf16> first,
                      PrefixSegment<Bf16> second, size_t head_width, float scale, float* scratch,
                      float* out, size_t out_stride);
void AttendPrefixRows(const float* q, size_t q_stride, size_t rows, PrefixSegment<Q8> first,
                      PrefixSegment<Q8> second, size_t head_width, float scale, float* scratch,
                      float* out, size_t out_stride);

// One K/V row of head_width f32 values as a q8_0 cache stores it: per block of
// kQ8KvBlock (the last one zero-padded), ggml's quantize_row_q8_0_ref
// (QuantizeBlockQ8_0: d = amax/127, q = roundf(x/d) with the f32 d, d stored as f16).
// quants takes Q8KvRowQuants(head_width) elements, scales one per block. Finite
// inputs give finite scales; a non-finite input makes its block's scale non-finite.
void QuantizeKvRowQ8_0(const float* row, size_t head_width, Q8* quants, Half* scales);

// One K/V row of n f32 values as an f16 or a bf16 cache stores it: element i is
// F32ToF16(row[i]) or F32ToBf16(row[i]) (compressed_matrix.h), their scalar twins,
// bit for bit on every target (F16C's conversion where x86 has it; integer rounding
// for bf16; the scalar conversion elsewhere). out must not overlap row.
void StoreKvRowF16(const float* row, size_t n, Half* out);
void StoreKvRowBf16(const float* row, size_t n, Bf16* out);
// The reference engine's q8_0 cache: the same formula in f64 on an f64 row, each
// value replaced by RoundToF16(d)·q (d = amax/127 and q = round(x/d), half away from
// zero, in f64).
void RoundKvRowToQ8_0(const double* row, size_t head_width, double* out);

}  // namespace kvrt::simd
