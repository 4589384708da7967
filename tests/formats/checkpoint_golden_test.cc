// The golden checkpoints (fixtures/golden/*.ckpt with their .json digests) and
// the demo checkpoint (fixtures/demo/demo.ckpt with golden.json): file facts,
// config, tokenizer, parameters and the demo's tokenizer round trips.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats_test_support.h"
#include "formats/llmcp35/checkpoint.h"

namespace kvrt {
namespace {

using nlohmann::json;
using testing::BitsOf;

uint64_t Bits(const json& hex) {
  std::string text = hex.get<std::string>();
  if (text.rfind("0x", 0) == 0) text = text.substr(2);
  return std::stoull(text, nullptr, 16);
}

std::string Label(uint64_t checksum) {
  char label[32];
  std::snprintf(label, sizeof label, "fnv1a64:%016llx", static_cast<unsigned long long>(checksum));
  return label;
}

std::vector<uint32_t> IdList(const json& ids) { return ids.get<std::vector<uint32_t>>(); }

class GoldenCheckpointTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    golden_ =
        json::parse(testing::ReadText(testing::FixturePath("golden/" + GetParam() + ".json")));
    Result<Checkpoint> loaded =
        LoadCheckpoint(testing::FixturePath("golden/" + GetParam() + ".ckpt"));
    ASSERT_TRUE(loaded) << loaded.error().Debug();
    checkpoint_ = std::make_unique<Checkpoint>(std::move(*loaded));
  }

  json golden_;
  std::unique_ptr<Checkpoint> checkpoint_;
};

TEST_P(GoldenCheckpointTest, FileFactsMatch) {
  const json& facts = golden_["checkpoint"];
  EXPECT_EQ(facts["file"], GetParam() + ".ckpt");
  EXPECT_EQ(checkpoint_->file_bytes, facts["bytes"].get<uint64_t>());
  EXPECT_EQ(checkpoint_->header_bytes, facts["header_bytes"].get<uint64_t>());
  EXPECT_EQ(checkpoint_->payload_bytes + checkpoint_->header_bytes, checkpoint_->file_bytes);
  EXPECT_EQ(Label(checkpoint_->checksum), facts["checksum"].get<std::string>());
  EXPECT_EQ(checkpoint_->descriptors.size(), facts["tensor_records"].get<size_t>());
  EXPECT_EQ(checkpoint_->selected_step, facts["selected_step"].get<uint64_t>());
  EXPECT_EQ(checkpoint_->sampling_rng_state, Bits(facts["sampling_rng_state"]));
}

TEST_P(GoldenCheckpointTest, AdamWStateMatches) {
  const json& adamw = golden_["checkpoint"]["adamw"];
  const OptimizerState& optimizer = checkpoint_->optimizer;
  EXPECT_EQ(BitsOf(optimizer.config.learning_rate), Bits(adamw["learning_rate"]["bits"]));
  EXPECT_EQ(BitsOf(optimizer.config.beta1), Bits(adamw["beta1"]["bits"]));
  EXPECT_EQ(BitsOf(optimizer.config.beta2), Bits(adamw["beta2"]["bits"]));
  EXPECT_EQ(BitsOf(optimizer.config.epsilon), Bits(adamw["epsilon"]["bits"]));
  EXPECT_EQ(BitsOf(optimizer.config.weight_decay), Bits(adamw["weight_decay"]["bits"]));
  EXPECT_EQ(optimizer.has_groups, adamw["parameter_groups"].get<bool>());
  EXPECT_EQ(optimizer.step, adamw["step"].get<uint64_t>());
  EXPECT_TRUE(optimizer.moments.empty());
  EXPECT_EQ(BitsOf(optimizer.beta1_power), BitsOf(1.0));
  EXPECT_EQ(BitsOf(optimizer.beta2_power), BitsOf(1.0));
}

TEST_P(GoldenCheckpointTest, ConfigMatches) {
  const json& config = golden_["config"];
  const ModelConfig& stored = checkpoint_->config;
  EXPECT_EQ(stored.vocabulary_size, config["vocabulary_size"].get<size_t>());
  EXPECT_EQ(stored.model_width, config["model_width"].get<size_t>());
  EXPECT_EQ(stored.heads, config["heads"].get<size_t>());
  EXPECT_EQ(stored.feed_forward_width, config["feed_forward_width"].get<size_t>());
  EXPECT_EQ(stored.layers, config["layers"].get<size_t>());
  EXPECT_EQ(stored.max_positions, config["max_positions"].get<size_t>());
  EXPECT_EQ(BitsOf(stored.rope_base), Bits(config["rope_base"]["bits"]));
  EXPECT_EQ(BitsOf(stored.rms_epsilon), Bits(config["rms_epsilon"]["bits"]));
  EXPECT_EQ(stored.head_width(), golden_["derived"]["head_width"].get<size_t>());
  EXPECT_EQ(checkpoint_->parameters.size(), golden_["derived"]["parameter_tensors"].get<size_t>());
}

TEST_P(GoldenCheckpointTest, TokenizerMatches) {
  const json& tokenizer = golden_["checkpoint"]["tokenizer"];
  const Tokenizer& stored = checkpoint_->tokenizer;
  EXPECT_EQ(stored.kind_name(), tokenizer["kind"].get<std::string>());
  EXPECT_EQ(stored.vocabulary_size(), tokenizer["vocabulary_size"].get<size_t>());
  if (stored.kind() == TokenizerKind::kLiteral) {
    EXPECT_EQ(stored.pieces(), tokenizer["pieces"].get<std::vector<std::string>>());
    return;
  }
  EXPECT_EQ(stored.merges().size(), tokenizer["merge_count"].get<size_t>());
  const json& pairs = tokenizer["merge_training_pairs"];
  ASSERT_EQ(pairs.size(), stored.merges().size());
  for (size_t rank = 0; rank < pairs.size(); ++rank) {
    EXPECT_EQ(stored.merges()[rank].first, pairs[rank][0].get<uint32_t>()) << rank;
    EXPECT_EQ(stored.merges()[rank].second, pairs[rank][1].get<uint32_t>()) << rank;
  }
}

TEST_P(GoldenCheckpointTest, ParametersMatchByBits) {
  const json& parameters = golden_["parameters"];
  ASSERT_EQ(parameters.size(), checkpoint_->parameters.size());
  for (size_t i = 0; i < parameters.size(); ++i) {
    const NamedTensor& stored = checkpoint_->parameters[i];
    const json& expected = parameters[i];
    SCOPED_TRACE(stored.name);
    EXPECT_EQ(stored.name, expected["name"].get<std::string>());
    EXPECT_EQ(stored.shape, expected["shape"].get<std::vector<size_t>>());
    const json& first = expected["first"]["bits"];
    ASSERT_EQ(first.size(), std::min<size_t>(4, stored.values.size()));
    for (size_t k = 0; k < first.size(); ++k)
      EXPECT_EQ(BitsOf(stored.values[k]), Bits(first[k])) << k;
    ASSERT_FALSE(stored.values.empty());
    EXPECT_EQ(BitsOf(stored.values.back()), Bits(expected["last"]["bits"]));
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenCheckpointTest,
                         ::testing::ValuesIn(testing::GoldenCaseNames()));

// The bpe-text prompts of the byte-BPE cases are the first ids of
// encode_utf8_document(prompt_text).
TEST(GoldenPromptTest, BpePromptsEncodeAsRecorded) {
  size_t checked = 0;
  for (const std::string& name : testing::GoldenCaseNames()) {
    const json golden =
        json::parse(testing::ReadText(testing::FixturePath("golden/" + name + ".json")));
    if (golden["checkpoint"]["tokenizer"]["kind"] != "byte-bpe") continue;
    const Result<Checkpoint> checkpoint =
        LoadCheckpoint(testing::FixturePath("golden/" + name + ".ckpt"));
    ASSERT_TRUE(checkpoint) << checkpoint.error().Debug();
    for (const json& prompt : golden["prompts"]) {
      if (prompt["source"] != "bpe-text") continue;
      SCOPED_TRACE(name + " " + prompt["name"].get<std::string>());
      const Result<std::vector<uint32_t>> document =
          checkpoint->tokenizer.EncodeDocument(prompt["prompt_text"].get<std::string>());
      ASSERT_TRUE(document);
      const std::vector<uint32_t> expected = IdList(prompt["prompt"]);
      ASSERT_LE(expected.size(), document->size());
      EXPECT_TRUE(std::equal(expected.begin(), expected.end(), document->begin()));
      ++checked;
    }
  }
  EXPECT_GT(checked, 0u);
}

class DemoCheckpointTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    golden_ = new json(json::parse(testing::ReadText(testing::FixturePath("demo/golden.json"))));
    Result<Checkpoint> loaded = LoadCheckpoint(testing::FixturePath("demo/demo.ckpt"));
    if (loaded)
      checkpoint_ = new Checkpoint(std::move(*loaded));
    else
      load_error_ = new std::string(loaded.error().Debug());
  }
  static void TearDownTestSuite() {
    delete golden_;
    delete checkpoint_;
    delete load_error_;
  }
  void SetUp() override { ASSERT_NE(checkpoint_, nullptr) << *load_error_; }

  static json* golden_;
  static Checkpoint* checkpoint_;
  static std::string* load_error_;
};

json* DemoCheckpointTest::golden_ = nullptr;
Checkpoint* DemoCheckpointTest::checkpoint_ = nullptr;
std::string* DemoCheckpointTest::load_error_ = nullptr;

TEST_F(DemoCheckpointTest, FileFactsAndConfigMatch) {
  const json& facts = (*golden_)["checkpoint"];
  EXPECT_EQ(checkpoint_->file_bytes, facts["bytes"].get<uint64_t>());
  EXPECT_EQ(checkpoint_->header_bytes, facts["header_bytes"].get<uint64_t>());
  EXPECT_EQ(Label(checkpoint_->checksum), facts["llmcp35_checksum"].get<std::string>());
  EXPECT_EQ(checkpoint_->sampling_rng_state, Bits(facts["sampling_rng_state"]));
  EXPECT_EQ(checkpoint_->selected_step, facts["selected_step"].get<uint64_t>());
  EXPECT_EQ(checkpoint_->descriptors.size(), facts["tensor_records"].get<size_t>());
  const json& config = (*golden_)["model_config"];
  EXPECT_EQ(checkpoint_->config.vocabulary_size, config["vocabulary_size"].get<size_t>());
  EXPECT_EQ(checkpoint_->config.model_width, config["model_width"].get<size_t>());
  EXPECT_EQ(checkpoint_->config.heads, config["heads"].get<size_t>());
  EXPECT_EQ(checkpoint_->config.feed_forward_width, config["feed_forward_width"].get<size_t>());
  EXPECT_EQ(checkpoint_->config.layers, config["layers"].get<size_t>());
  EXPECT_EQ(checkpoint_->config.max_positions, config["max_positions"].get<size_t>());
  EXPECT_EQ(checkpoint_->config.rope_base, config["rope_base"].get<double>());
  EXPECT_EQ(checkpoint_->config.rms_epsilon, config["rms_epsilon"].get<double>());
  size_t scalars = 0;
  for (const NamedTensor& parameter : checkpoint_->parameters) scalars += parameter.values.size();
  EXPECT_EQ(scalars, config["parameter_scalars"].get<size_t>());
}

TEST_F(DemoCheckpointTest, MergeRulesMatch) {
  const json& tokenizer = (*golden_)["tokenizer"];
  EXPECT_EQ(checkpoint_->tokenizer.kind_name(), tokenizer["kind"].get<std::string>());
  EXPECT_EQ(checkpoint_->tokenizer.vocabulary_size(), tokenizer["vocabulary_size"].get<size_t>());
  EXPECT_EQ(checkpoint_->tokenizer.bos_id(), tokenizer["bos_id"].get<uint32_t>());
  EXPECT_EQ(checkpoint_->tokenizer.eos_id(), tokenizer["eos_id"].get<uint32_t>());
  const json& rules = tokenizer["merge_rules"];
  ASSERT_EQ(rules.size(), checkpoint_->tokenizer.merges().size());
  for (const json& rule : rules) {
    const size_t rank = rule["rank"].get<size_t>();
    EXPECT_EQ(checkpoint_->tokenizer.merges()[rank].first,
              rule["training_pair"][0].get<uint32_t>());
    EXPECT_EQ(checkpoint_->tokenizer.merges()[rank].second,
              rule["training_pair"][1].get<uint32_t>());
    const Result<std::string_view> bytes =
        checkpoint_->tokenizer.TokenBytes(rule["content_id"].get<uint32_t>());
    ASSERT_TRUE(bytes);
    EXPECT_EQ(testing::HexOf(*bytes), rule["bytes_hex"].get<std::string>()) << rank;
  }
}

TEST_F(DemoCheckpointTest, SamplePromptsEncodeAndContinuationsDecode) {
  for (const json& sample : (*golden_)["samples"]) {
    SCOPED_TRACE(sample["label"].get<std::string>());
    const std::vector<uint32_t> prompt = IdList(sample["prompt_ids"]);
    const std::string prompt_text = sample["prompt_text"].get<std::string>();
    if (prompt != std::vector<uint32_t>{0}) {
      const Result<std::vector<uint32_t>> encoded =
          checkpoint_->tokenizer.EncodeContent(prompt_text);
      ASSERT_TRUE(encoded);
      EXPECT_EQ(*encoded, prompt);
    }
    std::vector<uint32_t> generated = IdList(sample["generated_ids"]);
    if (!generated.empty() && generated.back() == 1) generated.pop_back();
    const Result<std::string> continuation = checkpoint_->tokenizer.DecodeContentUtf8(generated);
    if (sample["decode_error"].is_null()) {
      ASSERT_TRUE(continuation) << continuation.error().Debug();
      EXPECT_EQ(*continuation, sample["decoded_continuation_utf8"].get<std::string>());
      EXPECT_EQ(prompt_text + *continuation, sample["full_text"].get<std::string>());
    } else {
      EXPECT_FALSE(continuation);
    }
  }
}

}  // namespace
}  // namespace kvrt
