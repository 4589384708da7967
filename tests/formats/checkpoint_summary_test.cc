// The six reference samples of fixtures/checkpoints against the crate's own dump
// (<name>.summary.txt): every field the summary lists, bit for bit.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "formats_test_support.h"
#include "formats/llmcp35/checkpoint.h"
#include "core/rust_format.h"

namespace kvrt {
namespace {

using testing::Attribute;
using testing::AttributeBits;
using testing::BitsOf;
using testing::QuotedList;
using testing::SummaryFile;

std::string ChecksumLabel(uint64_t checksum) {
  char label[32];
  std::snprintf(label, sizeof label, "fnv1a64:%016llx", static_cast<unsigned long long>(checksum));
  return label;
}

std::string ShapeText(const std::vector<uint64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string PairText(uint64_t left, uint64_t right) {
  return "(" + std::to_string(left) + "," + std::to_string(right) + ")";
}

class SummaryTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    summary_ = std::make_unique<SummaryFile>(
        testing::FixturePath("checkpoints/" + GetParam() + ".summary.txt"));
    ASSERT_GT(summary_->size(), 20u);
    Result<Checkpoint> loaded =
        LoadCheckpoint(testing::FixturePath("checkpoints/" + GetParam() + ".ckpt"));
    ASSERT_TRUE(loaded) << loaded.error().Debug();
    checkpoint_ = std::make_unique<Checkpoint>(std::move(*loaded));
  }

  const SummaryFile& summary() const { return *summary_; }
  const Checkpoint& checkpoint() const { return *checkpoint_; }

 private:
  std::unique_ptr<SummaryFile> summary_;
  std::unique_ptr<Checkpoint> checkpoint_;
};

TEST_P(SummaryTest, FileFactsMatch) {
  EXPECT_EQ(summary().Get("file"), GetParam() + ".ckpt");
  EXPECT_EQ(checkpoint().file_bytes, summary().U64("file_bytes"));
  EXPECT_EQ(checkpoint().header_bytes, summary().U64("header_bytes"));
  EXPECT_EQ(checkpoint().payload_bytes, summary().U64("payload_bytes"));
  EXPECT_EQ(ChecksumLabel(checkpoint().checksum), summary().Get("checksum"));
  EXPECT_EQ(checkpoint().selected_step, summary().U64("selected_step"));
  EXPECT_EQ(Hex64(checkpoint().sampling_rng_state), summary().Get("sampling_rng_state"));
}

TEST_P(SummaryTest, TokenizerMatches) {
  const Tokenizer& tokenizer = checkpoint().tokenizer;
  EXPECT_EQ(tokenizer.kind_name(), summary().Get("tokenizer_kind"));
  EXPECT_EQ(tokenizer.vocabulary_size(), summary().U64("tokenizer_vocabulary"));
  if (tokenizer.kind() == TokenizerKind::kLiteral) {
    ASSERT_EQ(tokenizer.pieces().size(), tokenizer.vocabulary_size());
    EXPECT_FALSE(summary().Has("literal_piece[" + std::to_string(tokenizer.pieces().size()) + "]"));
    for (size_t id = 0; id < tokenizer.pieces().size(); ++id) {
      const std::string& line = summary().Get("literal_piece[" + std::to_string(id) + "]");
      const std::string& piece = tokenizer.pieces()[id];
      EXPECT_EQ(Attribute(line, "hex"), testing::HexOf(piece)) << id;
      EXPECT_EQ(Attribute(line, "lossy"), RustQuoted(testing::LossyUtf8(piece))) << id;
    }
    EXPECT_FALSE(tokenizer.bos_id().has_value());
    return;
  }
  EXPECT_EQ(tokenizer.merges().size(), summary().U64("bpe_merge_count"));
  EXPECT_EQ(tokenizer.bos_id(), 0u);
  EXPECT_EQ(tokenizer.eos_id(), 1u);
  for (size_t rank = 0; rank < tokenizer.merges().size(); ++rank) {
    const std::string& line = summary().Get("bpe_rank[" + std::to_string(rank) + "]");
    const auto [left, right] = tokenizer.merges()[rank];
    EXPECT_EQ(Attribute(line, "training_pair"), PairText(left, right)) << rank;
    EXPECT_EQ(Attribute(line, "training_id"), std::to_string(256 + rank)) << rank;
    EXPECT_EQ(Attribute(line, "content_pair"), PairText(left + 2, right + 2)) << rank;
    const uint32_t content_id = static_cast<uint32_t>(258 + rank);
    EXPECT_EQ(Attribute(line, "content_id"), std::to_string(content_id)) << rank;
    const Result<std::string_view> bytes = tokenizer.TokenBytes(content_id);
    ASSERT_TRUE(bytes) << bytes.error().Debug();
    EXPECT_EQ(Attribute(line, "bytes_hex"), testing::HexOf(*bytes)) << rank;
    EXPECT_EQ(Attribute(line, "lossy"), RustQuoted(testing::LossyUtf8(*bytes))) << rank;
  }
}

TEST_P(SummaryTest, ModelConfigMatchesWithBitPatterns) {
  const std::string& line = summary().Get("model_config");
  const ModelConfig& config = checkpoint().config;
  EXPECT_EQ(Attribute(line, "vocabulary"), std::to_string(config.vocabulary_size));
  EXPECT_EQ(Attribute(line, "width"), std::to_string(config.model_width));
  EXPECT_EQ(Attribute(line, "heads"), std::to_string(config.heads));
  EXPECT_EQ(Attribute(line, "feed_forward"), std::to_string(config.feed_forward_width));
  EXPECT_EQ(Attribute(line, "layers"), std::to_string(config.layers));
  EXPECT_EQ(Attribute(line, "max_positions"), std::to_string(config.max_positions));
  EXPECT_EQ(Attribute(line, "rope_base"), RustDebug(config.rope_base));
  EXPECT_EQ(AttributeBits(line, "rope_base"), BitsOf(config.rope_base));
  EXPECT_EQ(Attribute(line, "rms_epsilon"), RustDebug(config.rms_epsilon));
  EXPECT_EQ(AttributeBits(line, "rms_epsilon"), BitsOf(config.rms_epsilon));
  EXPECT_EQ(config.kv_heads, config.heads);
  EXPECT_TRUE(config.tied_output);
}

TEST_P(SummaryTest, OptimizerStateMatches) {
  const OptimizerState& optimizer = checkpoint().optimizer;
  const std::string& line = summary().Get("adamw_config");
  const std::vector<std::pair<std::string, double>> fields = {
      {"lr", optimizer.config.learning_rate},
      {"beta1", optimizer.config.beta1},
      {"beta2", optimizer.config.beta2},
      {"epsilon", optimizer.config.epsilon},
      {"weight_decay", optimizer.config.weight_decay}};
  for (const auto& [name, value] : fields) {
    EXPECT_EQ(Attribute(line, name), RustDebug(value)) << name;
    EXPECT_EQ(AttributeBits(line, name), BitsOf(value)) << name;
  }
  EXPECT_EQ(summary().Get("adamw_groups"), optimizer.has_groups ? "present" : "absent");
  if (optimizer.has_groups) {
    EXPECT_EQ(optimizer.decay_group, QuotedList(summary().Get("adamw_decay")));
    EXPECT_EQ(optimizer.no_decay_group, QuotedList(summary().Get("adamw_no_decay")));
  } else {
    EXPECT_FALSE(summary().Has("adamw_decay"));
    EXPECT_TRUE(optimizer.decay_group.empty() && optimizer.no_decay_group.empty());
  }
  EXPECT_EQ(optimizer.step, summary().U64("adamw_step"));
  for (const auto& [key, value] :
       {std::pair<std::string, double>{"adamw_beta1_power", optimizer.beta1_power},
        {"adamw_beta2_power", optimizer.beta2_power}}) {
    const std::string& text = summary().Get(key);
    EXPECT_EQ(text.substr(0, text.find(' ')), RustDebug(value)) << key;
    EXPECT_EQ(std::stoull(text.substr(text.find("0x") + 2), nullptr, 16), BitsOf(value)) << key;
  }
  std::vector<std::string> moment_names;
  for (const OptimizerMoments& moments : optimizer.moments) moment_names.push_back(moments.name);
  EXPECT_EQ(moment_names, QuotedList(summary().Get("optimizer_names")));
}

TEST_P(SummaryTest, ParameterNamesAndFirstValuesMatch) {
  std::vector<std::string> names;
  for (const NamedTensor& parameter : checkpoint().parameters) names.push_back(parameter.name);
  EXPECT_EQ(names, QuotedList(summary().Get("model_parameter_names")));
  for (const NamedTensor& parameter : checkpoint().parameters) {
    const std::string key = "param_first_values[" + parameter.name + "]";
    ASSERT_TRUE(summary().Has(key)) << key;
    const std::vector<double> expected = testing::ParseList("[" + summary().Get(key) + "]");
    ASSERT_EQ(expected.size(), std::min<size_t>(3, parameter.values.size())) << key;
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(BitsOf(parameter.values[i]), BitsOf(expected[i])) << key << " " << i;
    }
  }
}

TEST_P(SummaryTest, EveryDescriptorRecordMatches) {
  const std::vector<TensorDescriptor>& descriptors = checkpoint().descriptors;
  ASSERT_EQ(descriptors.size(), summary().U64("records"));
  EXPECT_FALSE(summary().Has("record[" + std::to_string(descriptors.size()) + "]"));
  for (size_t i = 0; i < descriptors.size(); ++i) {
    const std::string& line = summary().Get("record[" + std::to_string(i) + "]");
    const TensorDescriptor& descriptor = descriptors[i];
    EXPECT_EQ(Attribute(line, "role"), TensorRoleName(descriptor.role)) << i;
    EXPECT_EQ(Attribute(line, "name"), RustQuoted(descriptor.name)) << i;
    EXPECT_EQ(Attribute(line, "dtype"), TensorDTypeName(descriptor.dtype)) << i;
    EXPECT_EQ(Attribute(line, "shape"), ShapeText(descriptor.shape)) << i;
    EXPECT_EQ(Attribute(line, "offset"), std::to_string(descriptor.offset)) << i;
    EXPECT_EQ(Attribute(line, "byte_len"), std::to_string(descriptor.byte_len)) << i;
  }
}

TEST_P(SummaryTest, BuildsAModelWithTheStoredValues) {
  const Result<DecoderModel> model = checkpoint().BuildModel();
  ASSERT_TRUE(model) << model.error().Debug();
  ASSERT_EQ(model->parameters().size(), checkpoint().parameters.size());
  for (size_t i = 0; i < checkpoint().parameters.size(); ++i) {
    const NamedTensor& stored = checkpoint().parameters[i];
    const Parameter& parameter = model->parameter(i);
    EXPECT_EQ(parameter.name(), stored.name);
    ASSERT_EQ(parameter.values().size(), stored.values.size());
    for (size_t k = 0; k < stored.values.size(); ++k) {
      ASSERT_EQ(BitsOf(parameter.values()[k]), BitsOf(stored.values[k])) << stored.name << " " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Samples, SummaryTest,
                         ::testing::ValuesIn(testing::SampleCheckpointNames()));

TEST(Ch38SummaryTest, GenerationContextFieldsComeFromTheFile) {
  const std::string text =
      testing::ReadText(testing::FixturePath("checkpoints/ch38_loaded.summary.txt"));
  const Result<Checkpoint> checkpoint =
      LoadCheckpoint(testing::FixturePath("checkpoints/ch38_loaded.ckpt"));
  ASSERT_TRUE(checkpoint) << checkpoint.error().Debug();
  EXPECT_NE(text.find("context_capacity=" + std::to_string(checkpoint->config.max_positions)),
            std::string::npos);
  EXPECT_NE(text.find("rng_state=" + Hex64(checkpoint->sampling_rng_state)), std::string::npos);
  // The ch38 demo decodes [4, 4] through the literal pieces.
  const std::vector<uint32_t> generated = {4, 4};
  const Result<std::string> decoded = checkpoint->tokenizer.DecodeContentUtf8(generated);
  ASSERT_TRUE(decoded) << decoded.error().Debug();
  EXPECT_EQ(*decoded, "44");
}

}  // namespace
}  // namespace kvrt
