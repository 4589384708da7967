// The errors a token step reports when its arithmetic leaves the finite numbers,
// named the way spec/kv-cache.md §3.7 names the failing stage. Shared by the
// reference and the fast engine, which detect the same conditions.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>

#include "kvrt/error.h"
#include "core/rust_format.h"

namespace kvrt::detail {

// The first i < n whose values[i] is not finite. Blocks are first tested without a
// branch, an OR over "exponent field all ones" (infinity or NaN) that compilers
// vectorize; only a block holding such a value is searched element by element, so
// the check over a decode step's logits costs a quarter of a one-by-one search.
template <class T>
std::optional<size_t> FirstNonFinite(const T* values, size_t n) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "IEEE binary32 or binary64");
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  constexpr Bits kExponent = sizeof(T) == 4 ? static_cast<Bits>(0x7F800000u) : static_cast<Bits>(0x7FF0000000000000u);
  constexpr size_t kBlock = 256;
  for (size_t begin = 0; begin < n; begin += kBlock) {
    const size_t end = std::min(n, begin + kBlock);
    Bits any = 0;
    for (size_t i = begin; i < end; ++i) {
      Bits bits;
      std::memcpy(&bits, values + i, sizeof bits);
      any |= static_cast<Bits>((bits & kExponent) == kExponent);
    }
    if (any == 0) continue;
    for (size_t i = begin; i < end; ++i) {
      if (!std::isfinite(values[i])) return i;
    }
  }
  return std::nullopt;
}

// NonFiniteActivation{stage, index, value}.
inline Error NonFinite(const char* stage, size_t index, double value) {
  return Error(ErrorCode::kNonFiniteActivation,
               {{"stage", Identifier{stage}}, {"index", uint64_t{index}}, {"value", value}},
               std::string(stage) + " produced a non-finite value " + RustDisplay(value) +
                   " at flat index " + std::to_string(index));
}

// A stage failure of block `layer`, e.g. AttentionNorm { layer: 1, source: ... }.
inline Error InLayer(Error inner, ErrorCode stage, size_t layer) {
  std::string message = "decoder block " + std::to_string(layer) + ": " + inner.message();
  return std::move(inner).Wrap(stage, {{"layer", uint64_t{layer}}}, std::move(message));
}

// A new K or V row that fails the cache's append validation (spec/kv-cache.md
// §1.4): IncrementalAttention { layer, source: Cache(NonFiniteKey { index, value }) }.
inline Error NonFiniteCandidateRow(bool is_key, size_t index, double value, size_t layer) {
  Error inner(is_key ? ErrorCode::kNonFiniteKey : ErrorCode::kNonFiniteValue,
              {{"index", uint64_t{index}}, {"value", value}},
              std::string("candidate ") + (is_key ? "key" : "value") + " element " +
                  std::to_string(index) + " is not finite");
  return InLayer(std::move(inner).Wrap(ErrorCode::kCache), ErrorCode::kIncrementalAttention, layer);
}

// Non-finite logits: Autodiff { stage: TiedVocabularyProjection, source: ... }.
inline Error NonFiniteLogits(size_t index, double value) {
  return NonFinite("vocabulary projection", index, value)
      .Wrap(ErrorCode::kAutodiff, {{"stage", Identifier{"TiedVocabularyProjection"}}});
}

}  // namespace kvrt::detail
