// Conversion at load to the K-quants, q5_0, q4_1, q5_1, iq4_nl and iq4_xs is ggml's
// reference quantization bit for bit: kq-f32.gguf converted by the engine's own path
// (--weights q2_k / q3_k / q4_k / q5_k / q6_k / q5_0 / q4_1 / q5_1 / iq4_nl / iq4_xs:
// the plan, then PackCompressedWeight from the parameter's f32 values) gives the same
// panels as the bytes llama-quantize b4747 wrote into kq-q4_k_s.gguf, kq-q5_k_m.gguf,
// kq-q3_k_m.gguf, kq-q2_k.gguf (its Q2_K and Q3_K tensors), kq-q6_k.gguf, kq-q5_0.gguf,
// kq-q4_1.gguf, kq-q5_1.gguf, kq-iq4_nl.gguf and kq-iq4_xs.gguf, repacked as stored.
// (llama-quantize without an importance matrix runs ggml's quantize_row_q*_ref, so
// every tensor it kept in Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q5_0, Q4_1, Q5_1, IQ4_NL or
// IQ4_XS is what --pure writes.) Equal panels mean equal ggml blocks: the repack places
// every bit of a block.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gguf_test_support.h"
#include "weights/compressed_weight.h"
#include "weights/weight_plan.h"

namespace kvrt::gguf::testing {
namespace {

DecoderModel LoadPanels(const std::string& name) {
  Result<DecoderModel> model = LoadGgufModel(FixturePath("modern/" + name), ModelStorage::kPanelsF32);
  EXPECT_TRUE(model) << model.error().Debug();
  return std::move(*model);
}

// Every matrix the quantized file keeps in `format` (for a mix: every matrix),
// converted from the f32 file: returns how many were compared.
size_t ExpectConversionEqualsFile(const std::string& quantized_file, WeightFormat format,
                                  const std::string& f32_file = "kq-f32.gguf") {
  const DecoderModel f32 = LoadPanels(f32_file);
  const DecoderModel quantized = LoadPanels(quantized_file);
  const std::vector<MatrixWeightFormat> converted = PlanWeightFormats(f32, format);
  const std::vector<MatrixWeightFormat> stored = PlanWeightFormats(quantized, WeightFormat::kAsStored);
  EXPECT_EQ(converted.size(), stored.size());
  size_t compared = 0;
  for (size_t i = 0; i < std::min(converted.size(), stored.size()); ++i) {
    const bool mix = IsWeightMix(format);
    if (!mix && stored[i].effective != format) continue;  // e.g. kq-q4_k_s's Q6_K head
    EXPECT_TRUE(stored[i].as_stored) << stored[i].name;
    EXPECT_EQ(converted[i].effective, mix ? stored[i].effective : format) << converted[i].name;
    const bool transposed = i == 0;  // the token table is packed as its [D, V] transpose
    Result<detail::CompressedWeight> ours =
        detail::PackCompressedWeight(f32.parameter(converted[i].parameter), transposed, converted[i]);
    Result<detail::CompressedWeight> theirs =
        detail::PackCompressedWeight(quantized.parameter(stored[i].parameter), transposed, stored[i]);
    EXPECT_TRUE(ours && theirs) << stored[i].name;
    if (!ours || !theirs) continue;
    const size_t bytes = simd::CompressedMatrixBytes(ours->view.type, ours->view.rows, ours->view.cols);
    EXPECT_EQ(bytes, simd::CompressedMatrixBytes(theirs->view.type, theirs->view.rows, theirs->view.cols));
    if (ours->view.type != theirs->view.type || ours->view.rows != theirs->view.rows ||
        ours->view.cols != theirs->view.cols) {
      ADD_FAILURE() << stored[i].name << ": different shapes or types";
      continue;
    }
    size_t differing = 0;
    for (size_t b = 0; b < bytes; ++b) differing += ours->owned[b] != theirs->owned[b];
    EXPECT_EQ(differing, 0u) << stored[i].name << ": " << differing << " of " << bytes << " bytes differ";
    ++compared;
  }
  return compared;
}

TEST(KQuantConversionTest, Q6_KEqualsLlamaQuantize) {
  // kq-q6_k keeps all 16 matrices (the token table and the head included) in Q6_K.
  EXPECT_EQ(ExpectConversionEqualsFile("kq-q6_k.gguf", WeightFormat::kQ6_K), 16u);
}

TEST(KQuantConversionTest, Q4_KEqualsLlamaQuantize) {
  // kq-q4_k_s keeps 13 in Q4_K (both attn_v are Q5_K, the head Q6_K).
  EXPECT_EQ(ExpectConversionEqualsFile("kq-q4_k_s.gguf", WeightFormat::kQ4_K), 13u);
}

TEST(KQuantConversionTest, Q5_KEqualsLlamaQuantize) {
  // kq-q5_k_m keeps 13 in Q5_K (blk.1's attn_v and ffn_down and the head are Q6_K);
  // kq-q4_k_s and kq-q3_k_m keep both attn_v in Q5_K.
  EXPECT_EQ(ExpectConversionEqualsFile("kq-q5_k_m.gguf", WeightFormat::kQ5_K), 13u);
  EXPECT_EQ(ExpectConversionEqualsFile("kq-q4_k_s.gguf", WeightFormat::kQ5_K), 2u);
  EXPECT_EQ(ExpectConversionEqualsFile("kq-q3_k_m.gguf", WeightFormat::kQ5_K), 2u);
}

TEST(KQuantConversionTest, IQ4_NLEqualsLlamaQuantize) {
  // kq-iq4_nl keeps 15 in IQ4_NL (the token table too; the head is Q6_K), quantized by
  // quantize_iq4_nl (ntry 7, no importance matrix); no other fixture holds one.
  EXPECT_EQ(ExpectConversionEqualsFile("kq-iq4_nl.gguf", WeightFormat::kIQ4_NL), 15u);
}

TEST(KQuantConversionTest, IQ4_XSEqualsLlamaQuantize) {
  // kq-iq4_xs keeps 15 in IQ4_XS (the head is Q6_K), quantized by quantize_iq4_xs.
  EXPECT_EQ(ExpectConversionEqualsFile("kq-iq4_xs.gguf", WeightFormat::kIQ4_XS), 15u);
}

TEST(KQuantConversionTest, Q5_0EqualsLlamaQuantize) {
  // kq-q5_0 keeps 15 in Q5_0 (the token table too; the head is Q6_K). No other fixture
  // holds a Q5_0 tensor (every K of the mixes' files is a multiple of 256).
  EXPECT_EQ(ExpectConversionEqualsFile("kq-q5_0.gguf", WeightFormat::kQ5_0), 15u);
}

TEST(KQuantConversionTest, Q4_1AndQ5_1EqualLlamaQuantize) {
  // kq-q4_1 and kq-q5_1 keep 15 in Q4_1 / Q5_1 (the token table too; the head is Q6_K),
  // quantized by quantize_row_q4_1_ref / _q5_1_ref; no other fixture holds one.
  EXPECT_EQ(ExpectConversionEqualsFile("kq-q4_1.gguf", WeightFormat::kQ4_1), 15u);
  EXPECT_EQ(ExpectConversionEqualsFile("kq-q5_1.gguf", WeightFormat::kQ5_1), 15u);
}

TEST(KQuantConversionTest, Q3_KEqualsLlamaQuantize) {
  // kq-q3_k_m keeps 9 matrices in Q3_K (the token table, and attn_q/k and ffn_gate/up
  // of both layers; attn_v is Q5_K, attn_output and ffn_down Q4_K, the head Q6_K);
  // kq-q2_k keeps the attn_v, attn_output and ffn_down of both layers in Q3_K.
  EXPECT_EQ(ExpectConversionEqualsFile("kq-q3_k_m.gguf", WeightFormat::kQ3_K), 9u);
  EXPECT_EQ(ExpectConversionEqualsFile("kq-q2_k.gguf", WeightFormat::kQ3_K), 6u);
}

TEST(KQuantConversionTest, Q2_KEqualsLlamaQuantize) {
  // kq-q2_k (llama-quantize's Q2_K mix) keeps 9 matrices in Q2_K: the token table, and
  // attn_q/k and ffn_gate/up of both layers (the rest Q3_K, the head Q6_K).
  EXPECT_EQ(ExpectConversionEqualsFile("kq-q2_k.gguf", WeightFormat::kQ2_K), 9u);
}

// A mix converts every matrix to the type and the bytes llama-quantize gave it.
TEST(KQuantConversionTest, MixesEqualLlamaQuantizeMatrixByMatrix) {
  EXPECT_EQ(ExpectConversionEqualsFile("kq-q4_k_m.gguf", WeightFormat::kQ4_K_M), 16u);
  EXPECT_EQ(ExpectConversionEqualsFile("kq-q4_k_s.gguf", WeightFormat::kQ4_K_S), 16u);
  EXPECT_EQ(ExpectConversionEqualsFile("kq-q5_k_m.gguf", WeightFormat::kQ5_K_M), 16u);
  EXPECT_EQ(ExpectConversionEqualsFile("kq-q3_k_m.gguf", WeightFormat::kQ3_K_M), 16u);
  // An untied head (Llama 3.1) and a tied one (Qwen2, whose token table is its head).
  EXPECT_EQ(ExpectConversionEqualsFile("llama31-q4_k_m.gguf", WeightFormat::kQ4_K_M, "llama31-f32.gguf"), 16u);
  EXPECT_EQ(ExpectConversionEqualsFile("qwen2-q4_k_m.gguf", WeightFormat::kQ4_K_M, "qwen2-f32.gguf"), 15u);
}

}  // namespace
}  // namespace kvrt::gguf::testing
