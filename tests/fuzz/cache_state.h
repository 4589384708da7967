// "The cache is unchanged": DecoderKvCache::operator== (spec/kv-cache.md §3.9),
// except where that equality cannot hold by definition.
//
// Equality compares the whole physical storage with f64 ==, so NaN never equals
// itself; a failed multi-row step may leave NaN in rows past len (stale data
// nobody reads). A cache holding NaN is compared bit for bit instead.
#pragma once

#include <cmath>
#include <cstring>
#include <vector>

#include "kv/decoder_kv_cache.h"

namespace kvrt::fuzz {

inline bool HasNan(const DecoderKvCache& cache) {
  for (size_t l = 0; l < cache.layer_count(); ++l) {
    for (const std::vector<double>& storage :
         {cache.layer(l)->KeyStorage(), cache.layer(l)->ValueStorage()}) {
      for (double x : storage) {
        if (std::isnan(x)) return true;
      }
    }
  }
  return false;
}

inline bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

inline bool SameState(const DecoderKvCache& a, const DecoderKvCache& b) {
  if (a == b) return true;
  if (!HasNan(a) && !HasNan(b)) return false;
  if (!a.config().SameAs(b.config()) || a.batch_size() != b.batch_size() ||
      a.capacity() != b.capacity() || a.precision() != b.precision() || a.len() != b.len() ||
      a.prefill_complete() != b.prefill_complete() || !(a.work() == b.work()) ||
      a.bindings() != b.bindings() || a.layer_count() != b.layer_count()) {
    return false;
  }
  for (size_t l = 0; l < a.layer_count(); ++l) {
    const LayerKvCache& x = *a.layer(l);
    const LayerKvCache& y = *b.layer(l);
    if (x.len() != y.len() || x.bindings() != y.bindings() ||
        !SameBits(x.KeyStorage(), y.KeyStorage()) || !SameBits(x.ValueStorage(), y.ValueStorage())) {
      return false;
    }
  }
  return true;
}

}  // namespace kvrt::fuzz
