// llama-quantize's K-quant mixes (weights/k_quant_mix.h). The rules are those of
// llama_tensor_get_type (llama.cpp b4747) for a dense Llama-style decoder quantized
// without an importance matrix: the branches for experts, Falcon, fused QKV
// projections and the IQ mixes never apply to the models kvrt runs.
#include "weights/k_quant_mix.h"

namespace kvrt::detail {
namespace {

constexpr size_t kSuperBlock = 256;  // rows of every K-quant block
constexpr size_t kSmallBlock = 32;   // rows of a q8_0, q5_0, q5_1 or iq4_nl block

MixTensorType DefaultType(KQuantMix mix) {
  switch (mix) {
    case KQuantMix::kQ2_K: return MixTensorType::kQ2_K;
    case KQuantMix::kQ3_K_S:
    case KQuantMix::kQ3_K_M:
    case KQuantMix::kQ3_K_L: return MixTensorType::kQ3_K;
    case KQuantMix::kQ4_K_S:
    case KQuantMix::kQ4_K_M: return MixTensorType::kQ4_K;
    case KQuantMix::kQ5_K_S:
    case KQuantMix::kQ5_K_M: return MixTensorType::kQ5_K;
    case KQuantMix::kQ6_K: return MixTensorType::kQ6_K;
  }
  return MixTensorType::kQ4_K;
}

size_t BlockRows(MixTensorType type) {
  switch (type) {
    case MixTensorType::kF16: return 1;
    case MixTensorType::kQ8_0:
    case MixTensorType::kQ5_0:
    case MixTensorType::kQ5_1:
    case MixTensorType::kIQ4_NL: return kSmallBlock;
    default: return kSuperBlock;
  }
}

// llama.cpp's use_more_bits: the first and the last eighth of the layers, and every
// third layer between them.
bool UseMoreBits(size_t layer, size_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

// llama.cpp's LLM_TYPE_70B: 80 layers with fewer key/value heads than query heads
// (Llama 2/3 70B, Qwen2 72B), whose value projection is small enough to get q5_k.
bool Is70B(const MixModel& model) { return model.layers == 80 && model.kv_heads < model.heads; }

MixTensorType ValueType(KQuantMix mix, MixTensorType type, size_t layer, const MixModel& model) {
  const size_t group = model.kv_heads == 0 ? 1 : model.heads / model.kv_heads;
  switch (mix) {
    case KQuantMix::kQ2_K: type = group >= 4 ? MixTensorType::kQ4_K : MixTensorType::kQ3_K; break;
    case KQuantMix::kQ3_K_M: type = layer < 2 ? MixTensorType::kQ5_K : MixTensorType::kQ4_K; break;
    case KQuantMix::kQ3_K_L: type = MixTensorType::kQ5_K; break;
    case KQuantMix::kQ4_K_M:
    case KQuantMix::kQ5_K_M:
      if (UseMoreBits(layer, model.layers)) type = MixTensorType::kQ6_K;
      break;
    case KQuantMix::kQ4_K_S:
      if (layer < 4) type = MixTensorType::kQ5_K;
      break;
    default: break;
  }
  if (Is70B(model) && (type == MixTensorType::kQ3_K || type == MixTensorType::kQ4_K)) {
    type = MixTensorType::kQ5_K;
  }
  return type;
}

MixTensorType DownType(KQuantMix mix, MixTensorType type, size_t layer, size_t layers) {
  switch (mix) {
    case KQuantMix::kQ2_K: return MixTensorType::kQ3_K;
    case KQuantMix::kQ3_K_M: return layer < layers / 16 ? MixTensorType::kQ5_K : MixTensorType::kQ4_K;
    case KQuantMix::kQ3_K_L: return MixTensorType::kQ5_K;
    case KQuantMix::kQ4_K_M:
    case KQuantMix::kQ5_K_M: return UseMoreBits(layer, layers) ? MixTensorType::kQ6_K : type;
    case KQuantMix::kQ4_K_S: return layer < layers / 8 ? MixTensorType::kQ5_K : type;
    default: return type;
  }
}

MixTensorType AttentionOutputType(KQuantMix mix, MixTensorType type) {
  switch (mix) {
    case KQuantMix::kQ2_K: return MixTensorType::kQ3_K;
    case KQuantMix::kQ3_K_M: return MixTensorType::kQ4_K;
    case KQuantMix::kQ3_K_L: return MixTensorType::kQ5_K;
    default: return type;
  }
}

// llama.cpp's replacement for a type whose block does not divide K. (A q8_0 head
// whose K is not a multiple of 32 stops llama-quantize with "Unsupported tensor
// size"; kvrt keeps such a matrix in f16 instead.)
MixTensorType FitRows(MixTensorType type, size_t rows_k) {
  if (rows_k % BlockRows(type) == 0) return type;
  switch (type) {
    case MixTensorType::kQ2_K:
    case MixTensorType::kQ3_K: type = MixTensorType::kIQ4_NL; break;
    case MixTensorType::kQ4_K: type = MixTensorType::kQ5_0; break;
    case MixTensorType::kQ5_K: type = MixTensorType::kQ5_1; break;
    case MixTensorType::kQ6_K: type = MixTensorType::kQ8_0; break;
    default: type = MixTensorType::kF16; break;
  }
  return rows_k % BlockRows(type) == 0 ? type : MixTensorType::kF16;
}

}  // namespace

std::string_view MixTensorTypeName(MixTensorType type) {
  switch (type) {
    case MixTensorType::kF16: return "f16";
    case MixTensorType::kQ8_0: return "q8_0";
    case MixTensorType::kQ5_0: return "q5_0";
    case MixTensorType::kQ5_1: return "q5_1";
    case MixTensorType::kIQ4_NL: return "iq4_nl";
    case MixTensorType::kQ2_K: return "q2_k";
    case MixTensorType::kQ3_K: return "q3_k";
    case MixTensorType::kQ4_K: return "q4_k";
    case MixTensorType::kQ5_K: return "q5_k";
    case MixTensorType::kQ6_K: return "q6_k";
  }
  return "unknown";
}

MixTensorType KQuantMixType(KQuantMix mix, MixMatrix matrix, size_t layer, size_t rows_k,
                            const MixModel& model) {
  MixTensorType type = DefaultType(mix);
  const bool head = matrix == MixMatrix::kHead ||
                    (matrix == MixMatrix::kTokenTable && model.head_is_token_table);
  if (head) {
    type = rows_k % BlockRows(type) != 0 ? MixTensorType::kQ8_0 : MixTensorType::kQ6_K;
  } else if (matrix == MixMatrix::kValue) {
    type = ValueType(mix, type, layer, model);
  } else if (matrix == MixMatrix::kDown) {
    type = DownType(mix, type, layer, model.layers);
  } else if (matrix == MixMatrix::kAttentionOutput) {
    type = AttentionOutputType(mix, type);
  }
  return FitRows(type, rows_k);
}

}  // namespace kvrt::detail
