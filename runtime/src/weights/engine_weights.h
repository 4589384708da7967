// A model's weights in the fast engine's layout and precision, packed once and
// shared by every session that binds the model with that precision.
//
// Matrices are column panels (simd/packed_matrix.h) of x·W: query, key, value,
// output, gate, up, down per block, and the vocabulary head [D, V] (for a tied
// head the token table transposed, which also serves the embedding lookup as
// column gathers). Parameters already kept in f32 panels are aliased, not copied.
// Gains and the RoPE tables are converted to T.
//
// Weight formats (kvrt/weight_format.h): in f32 a matrix planned in a compressed
// format is packed in the kernels' compressed panels instead (`compressed`); in
// f64 every matrix is f64 panels, of the values the format dequantizes to when a
// format is asked for explicitly (so fast f64 checks the same weights as the
// reference oracle, without the bandwidth savings).
//
// With int8 activations (EngineOptions::int8_activations, f32 only) every matrix of a
// format with an int8 kernel (ReachedByInt8Activations) is kept in the int8-activation
// kernels' quad layout instead of the row layout (simd/int8_activations.h): the same
// bytes per weight, one copy. With bf16 activations (EngineOptions::bf16_activations)
// every bf16 matrix with an even K is kept in the pair layout of the bf16-activation
// kernels instead (simd/bf16_activations.h), also one copy of the same bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/buffer.h"
#include "kvrt/error.h"
#include "model/decoder_model.h"
#include "model/derived_data.h"
#include "kvrt/simd/packed_matrix.h"
#include "kvrt/weight_format.h"
#include "weights/compressed_format.h"
#include "weights/compressed_weight.h"

namespace kvrt::detail {

// The opt-in activation roundings a packing serves (f32 only): which matrices move
// to the layout of which kernel.
struct ActivationRounding {
  bool int8 = false;  // ReachedByInt8Activations matrices in CompressedLayout::kInt8Quads
  bool bf16 = false;  // bf16 matrices of even K in CompressedLayout::kBf16Pairs

  size_t index() const { return (int8 ? 1 : 0) + (bf16 ? 2 : 0); }  // 0..3
};

template <class T>
struct PackedWeight {
  simd::PackedMatrixView<T> view;  // f32/f64 panels, unless compressed
  Buffer<T> owned;      // the panels, unless aliased
  ParameterPtr source;  // keeps an aliased parameter's panels alive
  CompressedWeight compressed;  // f32 engine only: the matrix in a compressed format

  bool is_compressed() const { return compressed.view.data != nullptr; }
  size_t cols() const { return is_compressed() ? compressed.view.cols : view.cols; }
};

template <class T>
struct BlockWeights {
  Buffer<T> attention_norm;  // [D]
  Buffer<T> ffn_norm;        // [D]
  // ModelConfig::attention_bias: the query, key and value biases back to back,
  // [D + 2·kv_width], the layout of a fused QKV row; empty without biases.
  Buffer<T> qkv_bias;
  PackedWeight<T> query, key, value, output, gate, up, down;
};

template <class T>
struct EngineWeights {
  std::vector<BlockWeights<T>> blocks;
  Buffer<T> final_norm;        // [D]
  PackedWeight<T> embedding;   // the token table transposed: [D, V] panels
  PackedWeight<T> head;        // untied heads only; a tied head is `embedding`
  Buffer<T> rope_cos;          // [rope.tabulated(), hw/2]; later positions per step
  Buffer<T> rope_sin;          // [rope.tabulated(), hw/2]
  std::vector<uint64_t> revisions;  // of every parameter when packed
  WeightFormat format = WeightFormat::kAsStored;  // as requested
  ActivationRounding activations;  // the layouts its matrices are in
  std::vector<MatrixWeightFormat> plan;  // every matrix's format, fallbacks included
  // The owned matrices back to back in step order (weights/weight_arena.h); empty
  // where it could not be allocated, and then each keeps its own buffer.
  Buffer<uint8_t> arena;

  const PackedWeight<T>& vocabulary_head(bool tied) const { return tied ? embedding : head; }
};

// Packed weights per precision and weight format, cached on a model (shared by
// copies of its handle) and repacked when a parameter's revision moved since the
// last packing. Also the dequantized models the reference oracle runs on.
class EngineWeightsCache {
 public:
  // `activations` applies to T = float only (ignored for double).
  template <class T>
  Result<std::shared_ptr<const EngineWeights<T>>> Get(
      const DecoderModel& model, WeightFormat format = WeightFormat::kAsStored,
      ActivationRounding activations = {});

  // DequantizedModel(model, format), made once per format and revision.
  Result<std::shared_ptr<const DecoderModel>> Dequantized(const DecoderModel& model,
                                                          WeightFormat format);

 private:
  static constexpr size_t kFormats = kWeightFormatCount;
  struct DequantizedEntry {
    std::shared_ptr<const DecoderModel> model;
    std::vector<uint64_t> revisions;
  };
  std::mutex mutex_;
  std::shared_ptr<const EngineWeights<float>> f32_[kFormats];
  // [ActivationRounding::index()]: 1 int8, 2 bf16, 3 both activation roundings.
  std::shared_ptr<const EngineWeights<float>> f32_rounded_[3][kFormats];
  std::shared_ptr<const EngineWeights<double>> f64_[kFormats];
  DequantizedEntry dequantized_[kFormats];
};

// The cache of `model` (created on first use, shared by copies of its handle).
// Throws std::bad_alloc, like the cache's own bookkeeping.
inline EngineWeightsCache& WeightsCacheOf(const DecoderModel& model) {
  return model.derived().GetOrCreate<EngineWeightsCache>();
}

// Packs every weight of `model` for precision T and weight format `format`. The
// caller holds shared borrows of the parameters (values must not change while
// they are read).
template <class T>
Result<std::shared_ptr<const EngineWeights<T>>> PackEngineWeights(
    const DecoderModel& model, WeightFormat format = WeightFormat::kAsStored,
    ActivationRounding activations = {});

}  // namespace kvrt::detail
