// Bytes of one stored K/V element.
#pragma once

#include <cstddef>

#include "kvrt/engine_options.h"

namespace kvrt {

inline size_t KvElementSize(Precision precision) {
  return precision == Precision::kF64 ? sizeof(double) : sizeof(float);
}

}  // namespace kvrt
