#include "weights/weight_arena.h"

#include <cstring>
#include <vector>

#include "core/checked_math.h"

namespace kvrt::detail {
namespace {

// The bytes a matrix owns, where its view points, and how to let go of them.
template <class T>
struct OwnedMatrix {
  explicit OwnedMatrix(PackedWeight<T>& matrix) : weight(&matrix) {}
  PackedWeight<T>* weight;

  size_t bytes() const {
    return weight->is_compressed() ? weight->compressed.owned.size()
                                   : weight->owned.size() * sizeof(T);
  }
  const void* data() const {
    return weight->is_compressed() ? static_cast<const void*>(weight->compressed.owned.data())
                                   : static_cast<const void*>(weight->owned.data());
  }
  void MoveTo(uint8_t* place) const {
    std::memcpy(place, data(), bytes());
    if (weight->is_compressed()) {
      weight->compressed.view.data = place;
      weight->compressed.owned = Buffer<uint8_t>();
    } else {
      weight->view.data = reinterpret_cast<const T*>(place);
      weight->owned = Buffer<T>();
    }
  }
};

}  // namespace

template <class T>
void GatherIntoArena(EngineWeights<T>& weights) {
  std::vector<OwnedMatrix<T>> matrices;
  auto add = [&](PackedWeight<T>& weight) {
    if (OwnedMatrix<T>(weight).bytes() != 0) matrices.emplace_back(weight);
  };
  for (BlockWeights<T>& block : weights.blocks) {
    for (PackedWeight<T>* weight : {&block.query, &block.key, &block.value, &block.output,
                                    &block.gate, &block.up, &block.down}) {
      add(*weight);
    }
  }
  add(weights.head);  // untied heads only (else empty)
  add(weights.embedding);
  if (matrices.size() < 2) return;  // nothing to bring together
  // Offsets keep the buffers' alignment (the kernels' loads and the views' contract
  // are 64-byte aligned).
  size_t total = 0;
  for (const OwnedMatrix<T>& matrix : matrices) total += AlignUp(matrix.bytes(), kBufferAlignment);
  std::optional<Buffer<uint8_t>> arena = Buffer<uint8_t>::Allocate(total, Pages::kHuge);
  if (!arena) return;  // each matrix keeps its own buffer
  size_t offset = 0;
  for (const OwnedMatrix<T>& matrix : matrices) {
    const size_t bytes = matrix.bytes();
    matrix.MoveTo(arena->data() + offset);
    offset += AlignUp(bytes, kBufferAlignment);
  }
  weights.arena = std::move(*arena);
}

template void GatherIntoArena<float>(EngineWeights<float>&);
template void GatherIntoArena<double>(EngineWeights<double>&);

}  // namespace kvrt::detail
