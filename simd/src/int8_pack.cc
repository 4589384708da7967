// The int8-activation path's load-time and per-row preparation (int8_activations.h):
// the quad relayout of q8_0, q4_0, iq4 and K-quant panels and the rounding of activation
// rows to q8_0 blocks. Plain C++; the quad offsets live in compressed_layout.h with the others.
#include <cstring>

#include "compressed_layout.h"
#include "kvrt/simd/int8_activations.h"

namespace kvrt::simd {

void QuantizeRowScalar(const float* x, const Int8Rows& out, size_t row) {
  int8_t* quants = out.quants + row * out.k;
  float* scales = out.scales + row * out.blocks();
  int32_t* sums = out.sums + row * out.blocks();
  int32_t* half_sums = out.half_sums + row * 2 * out.blocks();
  for (size_t b = 0; b < out.blocks(); ++b) {
    uint8_t block[compressed::kGgmlQ8BlockBytes];
    QuantizeBlockQ8_0(x + b * kQuantBlock, block);
    scales[b] = F16ToF32(compressed::LoadU16(block));
    int32_t half[2] = {0, 0};
    for (size_t i = 0; i < kQuantBlock; ++i) {
      const auto q = static_cast<int8_t>(block[2 + i]);
      quants[b * kQuantBlock + i] = q;
      half[i / (kQuantBlock / 2)] += q;
    }
    half_sums[2 * b] = half[0];
    half_sums[2 * b + 1] = half[1];
    sums[b] = half[0] + half[1];
  }
}

namespace {

// The unsigned quant of (k, j) in a row-layout panel: the nibble and, for q5_0, q5_1,
// q5_k and q6_k, its high bits (compressed_layout.h, PanelRows::HighBits).
int RowQuant(CompressedFormat type, const compressed::PanelRows& source, size_t k, size_t j) {
  const uint8_t byte = *source.NibbleByte(type, k, j);
  int q = j < compressed::kWidth / 2 ? byte & 0xF : byte >> 4;
  const uint8_t* high =
      compressed::HighBitsPerQuant(type) != 0 ? source.HighBits(type, k) : nullptr;
  if (compressed::HighBitsPerQuant(type) == 1) q |= (high[j / 8] >> (j % 8) & 1) << 4;
  if (type == CompressedFormat::kQ6_K) q |= (high[j / 4] >> (2 * (j % 4)) & 3) << 4;
  return q;
}

}  // namespace

bool HasInt8Quads(CompressedFormat type) { return compressed::HasQuadLayout(type); }

CompressedMatrixView PackInt8Quads(const CompressedMatrixView& w, uint8_t* out) {
  using compressed::kWidth;
  CompressedMatrixView quads = w;
  quads.data = out;
  quads.layout = CompressedLayout::kInt8Quads;
  const size_t panel_bytes = w.panel_bytes();
  const size_t super_rows = compressed::SuperRows(w.type);
  const size_t header_bytes = compressed::HeaderBytes(w.type);
  const bool planes = compressed::HighBitsPerQuant(w.type) != 0;
  std::memset(out, 0, w.panels() * panel_bytes);  // planes and q2_k's bytes are OR-ed into
  for (size_t p = 0; p < w.panels(); ++p) {
    const compressed::PanelRows source = compressed::RowsOfPanel(w, p);
    uint8_t* target = out + p * panel_bytes;
    for (size_t k0 = 0; k0 < w.rows; k0 += kQuantBlock) {
      if (header_bytes != 0 && k0 % super_rows == 0) {
        std::memcpy(target + compressed::QuadHeaderOffset(w.type, k0), source.Header(w.type, k0),
                    header_bytes);
      }
      std::memcpy(target + compressed::QuantBlockOffset(w.type, k0), source.Scales(w.type, k0),
                  compressed::ScaleAreaBytes(w.type));
      for (size_t k = k0; k < k0 + kQuantBlock; ++k) {
        if (w.type == CompressedFormat::kQ2_K) {
          // Row k's 2-bit quants, column c at bits 2c, each into its group's byte.
          uint64_t bits;
          std::memcpy(&bits, source.Q2Row(w.type, k), sizeof(bits));
          for (size_t j = 0; j < kWidth; ++j) {
            target[compressed::QuadByteOffset(w.type, k, j)] |=
                static_cast<uint8_t>((bits >> (2 * j) & 3) << compressed::Q2QuadShift(k));
          }
        } else if (w.type == CompressedFormat::kQ8_0) {
          const uint8_t* row = source.QuantRow(w.type, k);
          for (size_t j = 0; j < kWidth; ++j) {
            target[compressed::QuadByteOffset(w.type, k, j)] =
                static_cast<uint8_t>(row[j] ^ compressed::kQ8Offset);  // q + 128
          }
        } else if (!planes) {
          // A byte of the row layout already holds columns j and j + 16 of row k.
          for (size_t j = 0; j < kWidth / 2; ++j) {
            target[compressed::QuadByteOffset(w.type, k, j)] = *source.NibbleByte(w.type, k, j);
          }
        } else {
          for (size_t j = 0; j < kWidth; ++j) {
            const int q = RowQuant(w.type, source, k, j);
            const int shift = j < kWidth / 2 ? 0 : 4;
            target[compressed::QuadByteOffset(w.type, k, j)] |=
                static_cast<uint8_t>((q & 0xF) << shift);
            target[compressed::QuadPlaneByteOffset(w.type, k, j)] |=
                static_cast<uint8_t>((q >> 4) << compressed::QuadPlaneShift(w.type, k, j));
          }
        }
      }
    }
  }
  return quads;
}

}  // namespace kvrt::simd
