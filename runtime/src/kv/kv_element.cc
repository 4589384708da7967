#include "kv/kv_element.h"

#include "kvrt/config.h"

namespace kvrt {

// Declared in kvrt/engine_options.h, for callers outside the runtime (the CLI's
// cache-size line, the benchmarks' rooflines).
size_t KvRowBytes(Precision precision, KvType type, size_t head_width) {
  const size_t elements = KvRowElements(precision, type, head_width);
  const size_t scales = KvStoresQ8(precision, type) ? elements / simd::kQ8KvBlock * sizeof(uint16_t) : 0;
  return elements * KvElementSize(precision, type) + scales;
}

size_t KvBytesPerPosition(const ModelConfig& config, Precision precision, KvType type) {
  return 2 * config.layers * config.kv_heads * KvRowBytes(precision, type, config.head_width());
}

}  // namespace kvrt
