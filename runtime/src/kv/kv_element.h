// Bytes of one stored K/V element.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kvrt/engine_options.h"

namespace kvrt {

// An f64 cache (the reference engine) keeps f64 storage whatever the KV type (a
// 16-bit type rounds the values it holds); an f32 cache stores 16-bit elements for
// kF16 and kBf16.
inline size_t KvElementSize(Precision precision, KvType type) {
  if (precision == Precision::kF64) return sizeof(double);
  return IsHalfWidthKvType(type) ? sizeof(uint16_t) : sizeof(float);
}

}  // namespace kvrt
