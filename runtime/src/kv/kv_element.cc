#include "kv/kv_element.h"

namespace kvrt {

// Declared in kvrt/engine_options.h, for callers outside the runtime (the CLI's
// cache-size line, the benchmarks' rooflines).
size_t KvRowBytes(Precision precision, KvType type, size_t head_width) {
  const size_t elements = KvRowElements(precision, type, head_width);
  const size_t scales = KvStoresQ8(precision, type) ? elements / simd::kQ8KvBlock * sizeof(uint16_t) : 0;
  return elements * KvElementSize(precision, type) + scales;
}

}  // namespace kvrt
