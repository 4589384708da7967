// Bytes of stored K/V elements and rows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kvrt/engine_options.h"
#include "kvrt/simd/prefix_attention.h"

namespace kvrt {

// An f64 cache (the reference engine) keeps f64 storage whatever the KV type (a
// compact type rounds the values it holds); an f32 cache stores 16-bit elements for
// kF16 and kBf16, and for kQ8_0 int8 quants (their scales apart: KvRowBytes).
inline size_t KvElementSize(Precision precision, KvType type) {
  if (precision == Precision::kF64) return sizeof(double);
  if (type == KvType::kQ8_0) return sizeof(int8_t);
  return IsHalfWidthKvType(type) ? sizeof(uint16_t) : sizeof(float);
}

// Stored elements of one row of head_width: whole blocks of quants for an f32
// engine's q8_0 cache (simd::Q8KvRowQuants), else head_width.
// Whether the cache keeps q8_0 blocks: a quant region, then one f16 scale per
// simd::kQ8KvBlock quants.
inline bool KvStoresQ8(Precision precision, KvType type) {
  return precision == Precision::kF32 && type == KvType::kQ8_0;
}

inline size_t KvRowElements(Precision precision, KvType type, size_t head_width) {
  return KvStoresQ8(precision, type) ? simd::Q8KvRowQuants(head_width) : head_width;
}

}  // namespace kvrt
