// --weights on the CLI: strict parsing (exit 2 with a typed error line), the
// engine's stderr line naming the formats and every fallback, `inspect --weights`
// listing each matrix's effective type, and `logits` of the fast engine within
// 1e-4 of the reference oracle on the same dequantized weights.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "test_support.h"

namespace kvrt {
namespace {

using testing::RunKvrt;

const std::string kDemo = testing::FixturePath("demo/demo.ckpt");
const std::string kTinyQ8 = testing::FixturePath("gguf/tiny-q8_0.gguf");
const std::string kQ5_KM = testing::FixturePath("gguf/modern/kq-q5_k_m.gguf");
const std::string kQ5_0 = testing::FixturePath("gguf/modern/kq-q5_0.gguf");
const std::string kQ3_KM = testing::FixturePath("gguf/modern/kq-q3_k_m.gguf");
const std::string kIQ4_NL = testing::FixturePath("gguf/modern/kq-iq4_nl.gguf");
const std::string kIQ4_XS = testing::FixturePath("gguf/modern/kq-iq4_xs.gguf");
const std::string kQ4_1 = testing::FixturePath("gguf/modern/kq-q4_1.gguf");
const std::string kQ5_1 = testing::FixturePath("gguf/modern/kq-q5_1.gguf");
const std::string kQ2_K = testing::FixturePath("gguf/modern/kq-q2_k.gguf");

TEST(CliWeightsTest, AnUnknownFormatIsATypedUsageError) {
  for (const char* command : {"logits", "generate"}) {
    for (const char* bad : {"q5_2", "Q5_0", "", "f32,q8_0"}) {
      const testing::CliRun run = RunKvrt({command, "--model", kDemo, "--tokens", "1,2", "--weights", bad});
      EXPECT_EQ(run.status, 2) << command << " " << bad;
      EXPECT_NE(run.err.find("error: InvalidArgument: "), std::string::npos) << run.err;
    }
  }
  const testing::CliRun inspect = RunKvrt({"inspect", kDemo, "--weights", "int8"});
  EXPECT_EQ(inspect.status, 2);
  EXPECT_NE(inspect.err.find("error: InvalidArgument: --weights must be"), std::string::npos) << inspect.err;
}

TEST(CliWeightsTest, TheEngineLineNamesTheFormatAndEveryFallback) {
  const testing::CliRun run = RunKvrt({"generate", "--model", kDemo, "--tokens", "67,118", "--max-new-tokens", "4",
                                       "--weights", "q8_0", "--threads", "1"});
  ASSERT_EQ(run.status, 0) << run.err;
  // The demo's F = 172 is not a multiple of 32: both down projections are f16.
  EXPECT_NE(run.err.find("engine fast f32; weights q8_0: f16 x2 q8_0 x13; fallbacks: "
                         "blocks.0.ffn.down.weight q8_0 -> f16 (K = 172 is not a multiple of 32), "
                         "blocks.1.ffn.down.weight q8_0 -> f16"),
            std::string::npos)
      << run.err;
  const testing::CliRun stored = RunKvrt({"generate", "--model", kTinyQ8, "--tokens", "1,450", "--max-new-tokens",
                                          "2", "--threads", "1", "--no-eos"});
  ASSERT_EQ(stored.status, 0) << stored.err;
  EXPECT_NE(stored.err.find("; weights as-stored: q8_0 x16; no fallbacks"), std::string::npos) << stored.err;
  // A Q5_K_M file runs as stored in its two K-quants; q5_k falls back to q5_1 where K
  // (the demo's D = 64) is a multiple of 32 but not of 256, to f16 where it is neither
  // (the demo's F = 172), as llama.cpp's quantizer does.
  const testing::CliRun q5_k_m = RunKvrt({"generate", "--model", kQ5_KM, "--tokens", "1,450", "--max-new-tokens",
                                          "2", "--threads", "1", "--no-eos"});
  ASSERT_EQ(q5_k_m.status, 0) << q5_k_m.err;
  EXPECT_NE(q5_k_m.err.find("; weights as-stored: q6_k x3 q5_k x13; no fallbacks"), std::string::npos) << q5_k_m.err;
  const testing::CliRun q5_k = RunKvrt({"generate", "--model", kDemo, "--tokens", "67,118", "--max-new-tokens", "2",
                                        "--weights", "q5_k", "--threads", "1"});
  ASSERT_EQ(q5_k.status, 0) << q5_k.err;
  EXPECT_NE(q5_k.err.find("; weights q5_k: f16 x2 q5_1 x13; fallbacks: token_embedding.weight q5_k -> q5_1 (K = "
                          "64 is not a multiple of 256)"),
            std::string::npos)
      << q5_k.err;
  EXPECT_NE(q5_k.err.find("blocks.1.ffn.down.weight q5_k -> f16 (K = 172 is not a multiple of 256)"),
            std::string::npos)
      << q5_k.err;
  // A Q5_0 file runs as stored (its head in Q6_K), and q4_k falls back to q5_0 where K
  // (the demo's D = 64) is a multiple of 32 but not of 256, to f16 where it is neither
  // (the demo's F = 172), as llama.cpp's quantizer does.
  const testing::CliRun q5_0 = RunKvrt({"generate", "--model", kQ5_0, "--tokens", "1,450", "--max-new-tokens",
                                        "2", "--threads", "1", "--no-eos"});
  ASSERT_EQ(q5_0.status, 0) << q5_0.err;
  EXPECT_NE(q5_0.err.find("; weights as-stored: q6_k x1 q5_0 x15; no fallbacks"), std::string::npos) << q5_0.err;
  const testing::CliRun q4_k = RunKvrt({"generate", "--model", kDemo, "--tokens", "67,118", "--max-new-tokens", "2",
                                        "--weights", "q4_k", "--threads", "1"});
  ASSERT_EQ(q4_k.status, 0) << q4_k.err;
  EXPECT_NE(q4_k.err.find("; weights q4_k: f16 x2 q5_0 x13; fallbacks: token_embedding.weight q4_k -> q5_0 (K = "
                          "64 is not a multiple of 256)"),
            std::string::npos)
      << q4_k.err;
  EXPECT_NE(q4_k.err.find("blocks.0.ffn.down.weight q4_k -> f16 (K = 172 is not a multiple of 256)"),
            std::string::npos)
      << q4_k.err;
  const testing::CliRun explicit_q5_0 = RunKvrt({"generate", "--model", kDemo, "--tokens", "67,118",
                                                 "--max-new-tokens", "2", "--weights", "q5_0", "--threads", "1"});
  ASSERT_EQ(explicit_q5_0.status, 0) << explicit_q5_0.err;
  EXPECT_NE(explicit_q5_0.err.find("; weights q5_0: f16 x2 q5_0 x13; fallbacks: blocks.0.ffn.down.weight q5_0 -> "
                                   "f16 (K = 172 is not a multiple of 32)"),
            std::string::npos)
      << explicit_q5_0.err;
}

TEST(CliWeightsTest, TheEngineLineNamesAQ3_K_MFilesMatricesAndQ3_KsFallbacks) {
  // A Q3_K_M file runs as stored in its four K-quants.
  const testing::CliRun stored = RunKvrt({"generate", "--model", kQ3_KM, "--tokens", "1,450", "--max-new-tokens",
                                          "2", "--threads", "1", "--no-eos"});
  ASSERT_EQ(stored.status, 0) << stored.err;
  EXPECT_NE(stored.err.find("; weights as-stored: q4_k x4 q6_k x1 q5_k x2 q3_k x9; no fallbacks"), std::string::npos) << stored.err;
  // The demo (D 64, F 172) in q3_k: where K = 64 it falls back to iq4_nl as llama.cpp's
  // quantizer does, and the down projections (K = 172) to f16.
  const testing::CliRun q3_k = RunKvrt({"generate", "--model", kDemo, "--tokens", "67,118", "--max-new-tokens", "2",
                                        "--weights", "q3_k", "--threads", "1"});
  ASSERT_EQ(q3_k.status, 0) << q3_k.err;
  EXPECT_NE(q3_k.err.find("; weights q3_k: f16 x2 iq4_nl x13; fallbacks: token_embedding.weight q3_k -> iq4_nl "
                          "(K = 64 is not a multiple of 256)"),
            std::string::npos)
      << q3_k.err;
  EXPECT_NE(q3_k.err.find("blocks.1.ffn.down.weight q3_k -> f16 (K = 172 is not a multiple of 256)"),
            std::string::npos)
      << q3_k.err;
  // kq-f32 as Q3_K_M: the types of kq-q3_k_m.gguf.
  const testing::CliRun mixed = RunKvrt({"generate", "--model", testing::FixturePath("gguf/modern/kq-f32.gguf"),
                                         "--tokens", "1,450", "--max-new-tokens", "2", "--weights", "q3_k_m",
                                         "--threads", "1", "--no-eos"});
  ASSERT_EQ(mixed.status, 0) << mixed.err;
  EXPECT_NE(mixed.err.find("; weights q3_k_m: q4_k x4 q6_k x1 q5_k x2 q3_k x9; no fallbacks"), std::string::npos) << mixed.err;
  const testing::CliRun inspect = RunKvrt({"inspect", kDemo, "--weights", "q3_k", "--json"});
  ASSERT_EQ(inspect.status, 0) << inspect.err;
  const nlohmann::json weights = nlohmann::json::parse(inspect.out).at("weights");
  // Fallbacks only (a plain format, not a mix): no substitution fields.
  for (const nlohmann::json& matrix : weights.at("matrices")) {
    EXPECT_FALSE(matrix.contains("substituted")) << matrix;
    EXPECT_EQ(matrix.at("wanted"), "q3_k") << matrix;
  }
  EXPECT_FALSE(weights.contains("substitutions"));
  EXPECT_EQ(weights.at("fallbacks"), 15u);
}

// An IQ4_NL file runs as stored (its head in Q6_K); --weights iq4_nl converts the demo
// and falls back to f16 where K (the demo's F = 172) is not a multiple of 32.
TEST(CliWeightsTest, TheEngineLineNamesIQ4_NLMatrices) {
  const testing::CliRun stored = RunKvrt({"generate", "--model", kIQ4_NL, "--tokens", "1,450", "--max-new-tokens",
                                          "2", "--threads", "1", "--no-eos"});
  ASSERT_EQ(stored.status, 0) << stored.err;
  EXPECT_NE(stored.err.find("; weights as-stored: q6_k x1 iq4_nl x15; no fallbacks"), std::string::npos)
      << stored.err;
  const testing::CliRun converted = RunKvrt({"generate", "--model", kDemo, "--tokens", "67,118",
                                             "--max-new-tokens", "2", "--weights", "iq4_nl", "--threads", "1"});
  ASSERT_EQ(converted.status, 0) << converted.err;
  EXPECT_NE(converted.err.find("; weights iq4_nl: f16 x2 iq4_nl x13; fallbacks: blocks.0.ffn.down.weight iq4_nl -> "
                               "f16 (K = 172 is not a multiple of 32)"),
            std::string::npos)
      << converted.err;
}

// Q4_1 and Q5_1 files run as stored (their heads in Q6_K); --weights q4_1 / q5_1
// convert the demo and fall back to f16 where K (the demo's F = 172) is not a multiple
// of 32.
TEST(CliWeightsTest, TheEngineLineNamesQ4_1AndQ5_1Matrices) {
  for (const auto& [file, type] : {std::pair{kQ4_1, std::string("q4_1")}, std::pair{kQ5_1, std::string("q5_1")}}) {
    const testing::CliRun stored = RunKvrt({"generate", "--model", file, "--tokens", "1,450", "--max-new-tokens",
                                            "2", "--threads", "1", "--no-eos"});
    ASSERT_EQ(stored.status, 0) << stored.err;
    EXPECT_NE(stored.err.find("; weights as-stored: q6_k x1 " + type + " x15; no fallbacks"), std::string::npos)
        << stored.err;
    const testing::CliRun converted = RunKvrt({"generate", "--model", kDemo, "--tokens", "67,118",
                                               "--max-new-tokens", "2", "--weights", type, "--threads", "1"});
    ASSERT_EQ(converted.status, 0) << converted.err;
    EXPECT_NE(converted.err.find("; weights " + type + ": f16 x2 " + type + " x13; fallbacks: blocks.0.ffn.down.weight " +
                                 type + " -> f16 (K = 172 is not a multiple of 32)"),
              std::string::npos)
        << converted.err;
  }
}

// An IQ4_XS file runs as stored (its head in Q6_K); --weights iq4_xs falls back to
// iq4_nl where K (the demo's D = 64) is a multiple of 32 but not of 256, and to f16
// where it is neither (the demo's F = 172), as llama.cpp's quantizer does.
TEST(CliWeightsTest, TheEngineLineNamesIQ4_XSMatricesAndTheirFallbacks) {
  const testing::CliRun stored = RunKvrt({"generate", "--model", kIQ4_XS, "--tokens", "1,450", "--max-new-tokens",
                                          "2", "--threads", "1", "--no-eos"});
  ASSERT_EQ(stored.status, 0) << stored.err;
  EXPECT_NE(stored.err.find("; weights as-stored: q6_k x1 iq4_xs x15; no fallbacks"), std::string::npos)
      << stored.err;
  const testing::CliRun converted = RunKvrt({"generate", "--model", kDemo, "--tokens", "67,118",
                                             "--max-new-tokens", "2", "--weights", "iq4_xs", "--threads", "1"});
  ASSERT_EQ(converted.status, 0) << converted.err;
  EXPECT_NE(converted.err.find("; weights iq4_xs: f16 x2 iq4_nl x13; fallbacks: token_embedding.weight iq4_xs -> "
                               "iq4_nl (K = 64 is not a multiple of 256)"),
            std::string::npos)
      << converted.err;
  EXPECT_NE(converted.err.find("blocks.0.ffn.down.weight iq4_xs -> f16 (K = 172 is not a multiple of 256)"),
            std::string::npos)
      << converted.err;
}

// A Q2_K file (llama-quantize's Q2_K mix) runs as stored, its Q2_K matrices in q2_k;
// kq-f32 converts to q2_k whole (every K a multiple of 256); the demo's matrices fall
// back to iq4_nl where K = 64 is a multiple of 32 but not of 256 and to f16 where
// K = 172 is neither, as llama.cpp's quantizer does.
TEST(CliWeightsTest, TheEngineLineNamesQ2_KMatricesAndTheirFallbacks) {
  const testing::CliRun stored = RunKvrt({"generate", "--model", kQ2_K, "--tokens", "1,450", "--max-new-tokens",
                                          "2", "--threads", "1", "--no-eos"});
  ASSERT_EQ(stored.status, 0) << stored.err;
  EXPECT_NE(stored.err.find("; weights as-stored: q6_k x1 q3_k x6 q2_k x9; no fallbacks"), std::string::npos)
      << stored.err;
  const testing::CliRun whole = RunKvrt({"generate", "--model", testing::FixturePath("gguf/modern/kq-f32.gguf"),
                                         "--tokens", "1,450", "--max-new-tokens", "2", "--weights", "q2_k",
                                         "--threads", "1", "--no-eos"});
  ASSERT_EQ(whole.status, 0) << whole.err;
  EXPECT_NE(whole.err.find("; weights q2_k: q2_k x16; no fallbacks"), std::string::npos) << whole.err;
  const testing::CliRun converted = RunKvrt({"generate", "--model", kDemo, "--tokens", "67,118",
                                             "--max-new-tokens", "2", "--weights", "q2_k", "--threads", "1"});
  ASSERT_EQ(converted.status, 0) << converted.err;
  EXPECT_NE(converted.err.find("; weights q2_k: f16 x2 iq4_nl x13; fallbacks: token_embedding.weight q2_k -> "
                               "iq4_nl (K = 64 is not a multiple of 256)"),
            std::string::npos)
      << converted.err;
  EXPECT_NE(converted.err.find("blocks.0.ffn.down.weight q2_k -> f16 (K = 172 is not a multiple of 256)"),
            std::string::npos)
      << converted.err;
}

TEST(CliWeightsTest, AMixGivesEachMatrixLlamaQuantizesType) {
  // kq-f32 (D 256, F 768) as Q4_K_M: every type is a format, as in kq-q4_k_m.gguf.
  const std::string kF32 = testing::FixturePath("gguf/modern/kq-f32.gguf");
  const testing::CliRun mixed = RunKvrt({"generate", "--model", kF32, "--tokens", "1,450", "--max-new-tokens", "2",
                                         "--weights", "q4_k_m", "--threads", "1", "--no-eos"});
  ASSERT_EQ(mixed.status, 0) << mixed.err;
  EXPECT_NE(mixed.err.find("; weights q4_k_m: q4_k x13 q6_k x3; no fallbacks"), std::string::npos) << mixed.err;
  // The demo (D 64): llama.cpp's fallbacks for a K that no K-quant block divides, q4_k's
  // q5_0 and q5_k's q5_1, are kept as q5_0 and q5_1: every matrix's type is the one
  // llama-quantize names, and the listing has no substitution fields.
  for (const auto& [mix, fallback] : {std::pair{"q4_k_m", "q5_0"}, std::pair{"q5_k_m", "q5_1"}}) {
    const testing::CliRun run = RunKvrt({"inspect", kDemo, "--weights", mix, "--json"});
    ASSERT_EQ(run.status, 0) << run.err;
    const nlohmann::json weights = nlohmann::json::parse(run.out).at("weights");
    EXPECT_EQ(weights.at("requested"), mix);
    EXPECT_FALSE(weights.contains("substitutions")) << mix;
    size_t kept = 0;
    for (const nlohmann::json& matrix : weights.at("matrices")) {
      EXPECT_FALSE(matrix.contains("substituted")) << matrix;
      EXPECT_EQ(matrix.at("type"), matrix.at("llama_quantize_type")) << matrix;
      kept += matrix.at("type") == fallback;
    }
    EXPECT_GT(kept, 0u) << mix;
    const testing::CliRun text = RunKvrt({"inspect", kDemo, "--weights", mix});
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_EQ(text.out.find("not a kvrt format"), std::string::npos) << text.out;
    EXPECT_EQ(text.out.find("substitutions"), std::string::npos) << text.out;
  }
}

TEST(CliWeightsTest, InspectListsEachMatrixsEffectiveType) {
  const testing::CliRun run = RunKvrt({"inspect", kDemo, "--weights", "q4_0", "--json"});
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json json = nlohmann::json::parse(run.out);
  const nlohmann::json& weights = json.at("weights");
  EXPECT_EQ(weights.at("requested"), "q4_0");
  EXPECT_EQ(weights.at("fallbacks"), 2);
  ASSERT_EQ(weights.at("matrices").size(), 15u);  // token table + 2 × 7, tied head
  for (const nlohmann::json& matrix : weights.at("matrices")) {
    const bool down = matrix.at("name").get<std::string>().find("ffn.down") != std::string::npos;
    EXPECT_EQ(matrix.at("type"), down ? "f16" : "q4_0") << matrix.dump();
    EXPECT_EQ(matrix.at("fallback"), down) << matrix.dump();
  }
  const testing::CliRun text = RunKvrt({"inspect", kDemo, "--weights", "q4_0"});
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("blocks.1.ffn.down.weight                 [172, 64] f16   (fallback from q4_0: K = 172 "
                          "is not a multiple of 32)"),
            std::string::npos)
      << text.out;
}

std::vector<double> Logits(const std::vector<std::string>& args) {
  const testing::CliRun run = RunKvrt(args);
  EXPECT_EQ(run.status, 0) << run.err;
  if (run.status != 0) return {};
  return nlohmann::json::parse(run.out).at("logits").get<std::vector<double>>();
}

TEST(CliWeightsTest, FastLogitsAreWithinToleranceOfTheReferenceOracle) {
  for (const std::string format : {"bf16", "q8_0", "q4_0", "q5_0", "q4_1", "q5_1", "iq4_nl", "iq4_xs", "q2_k"}) {
    const std::vector<std::string> base = {"logits", "--model", kDemo, "--tokens", "67,118,34,102", "--json",
                                           "--weights", format};
    std::vector<std::string> fast = base, reference = base, uncached = base;
    fast.insert(fast.end(), {"--threads", "2"});
    reference.insert(reference.end(), {"--backend", "reference"});
    uncached.insert(uncached.end(), {"--backend", "reference", "--uncached"});
    const std::vector<double> a = Logits(fast), b = Logits(reference), c = Logits(uncached);
    ASSERT_EQ(a.size(), 358u);
    ASSERT_EQ(b.size(), a.size());
    EXPECT_EQ(b, c) << format;  // the cached and complete-prefix oracles agree bit for bit
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4) << format << " logit " << i;
  }
}

}  // namespace
}  // namespace kvrt
