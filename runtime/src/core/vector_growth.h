// std::vector growth that reports failure instead of throwing std::bad_alloc or
// std::length_error, for code that turns running out of memory into a typed
// error and must leave its state as it was.
#pragma once

#include <cstddef>
#include <new>
#include <stdexcept>
#include <vector>

namespace kvrt {

// Room for `count` elements; false (and `list` unchanged) when it cannot be had.
template <class T>
bool TryReserve(std::vector<T>& list, size_t count) {
  try {
    list.reserve(count);
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  } catch (const std::length_error&) {
    return false;
  }
}

// `destination` becomes a copy of `source`; false when it cannot be allocated.
template <class T>
bool TryCopy(const std::vector<T>& source, std::vector<T>& destination) {
  if (!TryReserve(destination, source.size())) return false;
  destination.assign(source.begin(), source.end());  // fits: cannot allocate
  return true;
}

}  // namespace kvrt
