// Constants of the LLMCP35 version-1 byte layout (spec/checkpoint.md §2–§5),
// shared by the reader and the writer so that both agree on every offset.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "formats/llmcp35/checkpoint.h"

namespace kvrt::llmcp35 {

inline constexpr std::array<uint8_t, 8> kMagic = {'L', 'L', 'M', 'C', 'P', '3', '5', '\0'};
inline constexpr uint16_t kSchemaVersion = 1;
inline constexpr uint32_t kEndianMarker = 0x01020304;
inline constexpr uint16_t kTokenizerLayoutVersion = 1;
inline constexpr uint16_t kRngAlgorithmVersion = 1;  // SplitMix64

// Fixed header: magic, version, marker, H, P, checksum.
inline constexpr size_t kVersionOffset = 8;
inline constexpr size_t kEndianOffset = 10;
inline constexpr size_t kHeaderBytesOffset = 14;
inline constexpr size_t kPayloadBytesOffset = 22;
inline constexpr size_t kChecksumOffset = 30;
inline constexpr size_t kChecksumWidth = 8;
inline constexpr size_t kFixedHeaderBytes = 38;

// FNV-1a 64 (§3).
inline constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ull;
inline constexpr uint64_t kFnvPrime = 0x00000100000001b3ull;

// Tokenizer kind tags and the groups flag (§4).
inline constexpr uint8_t kLiteralKindTag = 1;
inline constexpr uint8_t kByteBpeKindTag = 2;
inline constexpr uint8_t kNoGroupsFlag = 0;
inline constexpr uint8_t kGroupsFlag = 1;

// Every variable-header byte that does not depend on names or descriptors:
// 38 + 134 bytes up to the groups flag, then step, two beta powers and the three
// counts (§4). H = kFixedMetadataBytes + G + Σ descriptor sizes.
inline constexpr size_t kFixedMetadataBytes = 208;
// Per descriptor without its name and shape: role, name length, dtype, rank,
// offset and byte_len.
inline constexpr size_t kDescriptorFixedBytes = 26;
// Lower bounds used to cap reservations from untrusted counts: a descriptor with
// a one-byte name and rank 0 takes 27 bytes, an empty string takes 4.
inline constexpr size_t kMinDescriptorBytes = kDescriptorFixedBytes + 1;
inline constexpr size_t kMinStringBytes = 4;
inline constexpr size_t kDimensionBytes = 8;

// The BPE pairs record.
inline constexpr const char* kBpePairsName = "training-pairs";

inline constexpr size_t DTypeWidth(TensorDType dtype) {
  switch (dtype) {
    case TensorDType::kU8:
      return 1;
    case TensorDType::kU32:
      return 4;
    case TensorDType::kF64:
      return 8;
  }
  return 0;
}

inline std::optional<TensorRole> RoleFromTag(uint8_t tag) {
  if (tag < 1 || tag > 5) return std::nullopt;
  return static_cast<TensorRole>(tag);
}

inline std::optional<TensorDType> DTypeFromTag(uint8_t tag) {
  if (tag < 1 || tag > 3) return std::nullopt;
  return static_cast<TensorDType>(tag);
}

}  // namespace kvrt::llmcp35
