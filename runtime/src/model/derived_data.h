// What the layers above the model compute from its parameters once and share
// between copies of its handle: the fast engine's packed weights, the reference
// oracle's dequantized models (weights/engine_weights.h). The model only keeps the
// slots; whoever needs an entry creates it on first use, so model/ depends on
// none of them.
#pragma once

#include <memory>
#include <mutex>
#include <typeindex>
#include <utility>
#include <vector>

namespace kvrt {

class DerivedData {
 public:
  // The entry of type T, default-constructed on first use. Thread-safe; the
  // entry lives as long as the model's last handle. Throws std::bad_alloc.
  template <class T>
  T& GetOrCreate() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [type, entry] : entries_) {
      if (type == std::type_index(typeid(T))) return *static_cast<T*>(entry.get());
    }
    std::shared_ptr<T> entry = std::make_shared<T>();
    entries_.emplace_back(std::type_index(typeid(T)), entry);
    return *entry;
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<std::type_index, std::shared_ptr<void>>> entries_;
};

}  // namespace kvrt
