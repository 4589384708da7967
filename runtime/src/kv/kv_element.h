// Bytes of stored K/V elements and rows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kvrt/engine_options.h"
#include "kvrt/simd/prefix_attention.h"

namespace kvrt {

// An f64 cache (the reference engine) keeps f64 storage whatever the KV type (a
// 16-bit type rounds the values it holds); an f32 cache stores 16-bit elements for
// kF16 and kBf16.
// A q8_0 cache's element is its int8 quant; the scales are counted by KvRowBytes.
inline size_t KvElementSize(Precision precision, KvType type) {
  if (precision == Precision::kF64) return sizeof(double);
  if (type == KvType::kQ8_0) return sizeof(int8_t);
  return IsHalfWidthKvType(type) ? sizeof(uint16_t) : sizeof(float);
}

// Stored elements of one row of head_width: whole blocks of quants for an f32
// engine's q8_0 cache (simd::Q8KvRowQuants), else head_width.
inline size_t KvRowElements(Precision precision, KvType type, size_t head_width) {
  const bool q8 = precision == Precision::kF32 && type == KvType::kQ8_0;
  return q8 ? simd::Q8KvRowQuants(head_width) : head_width;
}

// Whether the cache keeps q8_0 blocks: a quant region, then one f16 scale per
// simd::kQ8KvBlock quants.
inline bool KvStoresQ8(Precision precision, KvType type) {
  return precision == Precision::kF32 && type == KvType::kQ8_0;
}


}  // namespace kvrt
