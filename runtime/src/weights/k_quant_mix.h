// llama-quantize's K-quant mixes (Q4_K_M and its kin): the tensor type llama.cpp
// b4747 gives each weight matrix of a Llama-style decoder (llama_tensor_get_type in
// src/llama-quant.cpp), before weight_plan.cc maps it onto kvrt's formats.
//
// A mix is a default type plus rules by tensor and layer: a few layers' value and
// down projections get more bits (use_more_bits: the first and last eighth of the
// layers and every third between), the vocabulary head (or the token table when it
// is also the head) gets q6_k. A type whose block does not divide the matrix's rows
// K (ggml's ne[0]) falls back as llama.cpp's does: q2_k/q3_k to iq4_nl, q4_k to q5_0,
// q5_k to q5_1, q6_k to q8_0, and to f16 when that block does not divide K either.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kvrt::detail {

// llama-quantize's K-quant mixes (its ftypes MOSTLY_Q2_K ... MOSTLY_Q6_K).
enum class KQuantMix : uint8_t { kQ2_K, kQ3_K_S, kQ3_K_M, kQ3_K_L, kQ4_K_S, kQ4_K_M, kQ5_K_S, kQ5_K_M, kQ6_K };

// The ggml types a K-quant mix gives the matrices of a Llama-style decoder.
enum class MixTensorType : uint8_t { kF16, kQ8_0, kQ5_0, kQ5_1, kIQ4_NL, kQ2_K, kQ3_K, kQ4_K, kQ5_K, kQ6_K };

// ggml's lower-case names: "f16", "q8_0", "q5_0", "q5_1", "iq4_nl", "q2_k" ... "q6_k".
std::string_view MixTensorTypeName(MixTensorType type);

// The weight matrices of a decoder, as llama.cpp names them: token_embd, attn_q,
// attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down, output.
enum class MixMatrix : uint8_t { kTokenTable, kQuery, kKey, kValue, kAttentionOutput, kGate, kUp, kDown, kHead };

// What the rules read of the model.
struct MixModel {
  size_t layers = 0;
  size_t heads = 0;
  size_t kv_heads = 0;
  // No separate vocabulary head: the token table is the head and is quantized as one.
  bool head_is_token_table = false;
};

// The type llama-quantize gives `matrix` of block `layer` (ignored for the token
// table and the head), whose rows are `rows_k` long, under `mix`.
MixTensorType KQuantMixType(KQuantMix mix, MixMatrix matrix, size_t layer, size_t rows_k,
                            const MixModel& model);

}  // namespace kvrt::detail
