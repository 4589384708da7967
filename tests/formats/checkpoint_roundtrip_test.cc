// Canonical writing: every valid fixture re-encodes to its exact bytes, the
// encoder derives all layout facts itself, rejects states the loader would
// reject, and SaveCheckpointAtomic publishes a file that loads back identical.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "formats/llmcp35/writer.h"
#include "formats_test_support.h"
#include "formats/llmcp35/checkpoint.h"

namespace kvrt {
namespace {

using testing::BitsOf;

Checkpoint Load(const std::string& relative) {
  Result<Checkpoint> checkpoint = LoadCheckpoint(testing::FixturePath(relative));
  EXPECT_TRUE(checkpoint) << relative << ": " << checkpoint.error().Debug();
  return checkpoint ? std::move(*checkpoint) : Checkpoint{};
}

void ExpectSameState(const Checkpoint& a, const Checkpoint& b) {
  EXPECT_TRUE(a.config.SameAs(b.config));
  EXPECT_EQ(a.tokenizer.kind(), b.tokenizer.kind());
  EXPECT_EQ(a.tokenizer.pieces(), b.tokenizer.pieces());
  EXPECT_EQ(a.tokenizer.merges(), b.tokenizer.merges());
  ASSERT_EQ(a.parameters.size(), b.parameters.size());
  for (size_t i = 0; i < a.parameters.size(); ++i) {
    EXPECT_EQ(a.parameters[i].name, b.parameters[i].name);
    EXPECT_EQ(a.parameters[i].shape, b.parameters[i].shape);
    EXPECT_TRUE(std::equal(a.parameters[i].values.begin(), a.parameters[i].values.end(),
                           b.parameters[i].values.begin(), b.parameters[i].values.end(),
                           [](double x, double y) { return BitsOf(x) == BitsOf(y); }));
  }
  EXPECT_EQ(a.optimizer.decay_group, b.optimizer.decay_group);
  EXPECT_EQ(a.optimizer.no_decay_group, b.optimizer.no_decay_group);
  EXPECT_EQ(a.optimizer.step, b.optimizer.step);
  EXPECT_EQ(BitsOf(a.optimizer.beta1_power), BitsOf(b.optimizer.beta1_power));
  EXPECT_EQ(BitsOf(a.optimizer.beta2_power), BitsOf(b.optimizer.beta2_power));
  ASSERT_EQ(a.optimizer.moments.size(), b.optimizer.moments.size());
  for (size_t i = 0; i < a.optimizer.moments.size(); ++i) {
    EXPECT_EQ(a.optimizer.moments[i].name, b.optimizer.moments[i].name);
    EXPECT_EQ(a.optimizer.moments[i].first, b.optimizer.moments[i].first);
    EXPECT_EQ(a.optimizer.moments[i].second, b.optimizer.moments[i].second);
  }
  EXPECT_EQ(a.selected_step, b.selected_step);
  EXPECT_EQ(a.sampling_rng_state, b.sampling_rng_state);
}

TEST(RoundTripTest, EveryValidFixtureReencodesByteForByte) {
  const std::vector<std::string> files = testing::AllValidCheckpointFiles();
  EXPECT_EQ(files.size(), 19u);
  for (const std::string& relative : files) {
    SCOPED_TRACE(relative);
    const std::vector<uint8_t> bytes = testing::ReadBytes(testing::FixturePath(relative));
    const Result<Checkpoint> parsed = ParseCheckpoint(bytes);
    ASSERT_TRUE(parsed) << parsed.error().Debug();
    const Result<llmcp35::EncodedCheckpoint> encoded = llmcp35::EncodeCanonical(*parsed);
    ASSERT_TRUE(encoded) << encoded.error().Debug();
    ASSERT_TRUE(encoded->bytes == bytes);
    // The derived facts are the ones the file declares.
    EXPECT_EQ(encoded->header_bytes, parsed->header_bytes);
    EXPECT_EQ(encoded->payload_bytes, parsed->payload_bytes);
    EXPECT_EQ(encoded->checksum, parsed->checksum);
    EXPECT_EQ(encoded->checksum, CheckpointChecksum(bytes));
    ASSERT_EQ(encoded->descriptors.size(), parsed->descriptors.size());
    for (size_t i = 0; i < encoded->descriptors.size(); ++i) {
      const TensorDescriptor& a = encoded->descriptors[i];
      const TensorDescriptor& b = parsed->descriptors[i];
      EXPECT_TRUE(a.role == b.role && a.name == b.name && a.dtype == b.dtype &&
                  a.shape == b.shape && a.offset == b.offset && a.byte_len == b.byte_len)
          << i;
    }
    const Result<std::vector<uint8_t>> public_encoding = EncodeCheckpoint(*parsed);
    ASSERT_TRUE(public_encoding);
    EXPECT_TRUE(*public_encoding == bytes);
  }
}

TEST(RoundTripTest, StoredFileFactsAreIgnoredByTheEncoder) {
  Checkpoint checkpoint = Load("checkpoints/ch38_loaded.ckpt");
  const std::vector<uint8_t> original =
      testing::ReadBytes(testing::FixturePath("checkpoints/ch38_loaded.ckpt"));
  checkpoint.header_bytes = 1;
  checkpoint.payload_bytes = 2;
  checkpoint.checksum = 3;
  checkpoint.file_bytes = 4;
  checkpoint.descriptors.clear();
  const Result<std::vector<uint8_t>> encoded = EncodeCheckpoint(checkpoint);
  ASSERT_TRUE(encoded);
  EXPECT_TRUE(*encoded == original);
}

TEST(RoundTripTest, GroupsAndMomentsAreWrittenInByteOrder) {
  Checkpoint checkpoint = Load("checkpoints/variant_literal_11layer.ckpt");
  const std::vector<uint8_t> original =
      testing::ReadBytes(testing::FixturePath("checkpoints/variant_literal_11layer.ckpt"));
  // Model order, not byte order: blocks.10 would follow blocks.9.
  std::reverse(checkpoint.optimizer.moments.begin(), checkpoint.optimizer.moments.end());
  const Result<std::vector<uint8_t>> encoded = EncodeCheckpoint(checkpoint);
  ASSERT_TRUE(encoded) << encoded.error().Debug();
  EXPECT_TRUE(*encoded == original);

  Checkpoint grouped = Load("checkpoints/ch38_loaded.ckpt");
  std::reverse(grouped.optimizer.decay_group.begin(), grouped.optimizer.decay_group.end());
  const Result<std::vector<uint8_t>> regrouped = EncodeCheckpoint(grouped);
  ASSERT_TRUE(regrouped);
  EXPECT_TRUE(*regrouped ==
              testing::ReadBytes(testing::FixturePath("checkpoints/ch38_loaded.ckpt")));
}

TEST(RoundTripTest, ChangedStateRoundTripsThroughTheParser) {
  Checkpoint checkpoint = Load("checkpoints/ch39_trained.ckpt");
  checkpoint.sampling_rng_state = 0xfeedbeefcafef00dull;
  checkpoint.parameters[0].values[3] = -0.0;
  checkpoint.optimizer.moments[0].second[0] = 0.0;
  const Result<std::vector<uint8_t>> encoded = EncodeCheckpoint(checkpoint);
  ASSERT_TRUE(encoded) << encoded.error().Debug();
  const Result<Checkpoint> parsed = ParseCheckpoint(*encoded);
  ASSERT_TRUE(parsed) << parsed.error().Debug();
  ExpectSameState(checkpoint, *parsed);
  EXPECT_EQ(BitsOf(parsed->parameters[0].values[3]), BitsOf(-0.0));
  EXPECT_NE(parsed->checksum, Load("checkpoints/ch39_trained.ckpt").checksum);
}

TEST(RoundTripTest, EncoderRejectsStatesTheLoaderWouldReject) {
  const Checkpoint base = Load("checkpoints/ch38_loaded.ckpt");

  Checkpoint short_values = base;
  short_values.parameters[1].values.pop_back();
  Result<std::vector<uint8_t>> encoded = EncodeCheckpoint(short_values);
  ASSERT_FALSE(encoded);
  EXPECT_EQ(
      encoded.error().Debug(),
      "Layout(\"tensor \\\"blocks.0.attention_norm.gain\\\" with shape [4] and dtype f64 needs "
      "32 bytes, got 24\")");

  Checkpoint step = base;
  step.selected_step = 7;
  encoded = EncodeCheckpoint(step);
  ASSERT_FALSE(encoded);
  EXPECT_EQ(encoded.error().Debug(), "StepMismatch { selected: 7, optimizer: 8 }");

  Checkpoint vocabulary = base;
  vocabulary.tokenizer = *Tokenizer::Literal({"a", "b", "c", "d"});
  encoded = EncodeCheckpoint(vocabulary);
  ASSERT_FALSE(encoded);
  EXPECT_EQ(encoded.error().Debug(), "VocabularyMismatch { tokenizer: 4, decoder: 5 }");

  Checkpoint empty_tokenizer = base;
  empty_tokenizer.tokenizer = Tokenizer();
  encoded = EncodeCheckpoint(empty_tokenizer);
  ASSERT_FALSE(encoded);
  EXPECT_EQ(encoded.error().code(), ErrorCode::kTokenizer);

  Checkpoint non_finite = base;
  non_finite.parameters[0].values[0] = std::numeric_limits<double>::infinity();
  encoded = EncodeCheckpoint(non_finite);
  ASSERT_FALSE(encoded);
  EXPECT_EQ(
      encoded.error().Debug(),
      "Initialization(Autodiff(NonFiniteLeaf { operation: Parameter, index: 0, value: inf }))");

  Checkpoint duplicate_moment = base;
  duplicate_moment.optimizer.moments[1].name = duplicate_moment.optimizer.moments[0].name;
  encoded = EncodeCheckpoint(duplicate_moment);
  ASSERT_FALSE(encoded);
  EXPECT_EQ(encoded.error().Debug(),
            "AdamWState(DuplicateParameterName { name: \"blocks.0.attention.key.weight\" })");

  Checkpoint shape = base;
  shape.optimizer.moments[0].shape = {2, 8};
  encoded = EncodeCheckpoint(shape);
  ASSERT_FALSE(encoded);
  EXPECT_EQ(encoded.error().Debug(),
            "OptimizerShape { name: \"blocks.0.attention.key.weight\", model: [4, 4], optimizer: "
            "[2, 8] }");
  EXPECT_EQ(encoded.error().message(),
            "optimizer shape [2, 8] for \"blocks.0.attention.key.weight\" does not match model "
            "shape [4, 4]");

  Checkpoint missing = base;
  missing.optimizer.moments.pop_back();
  missing.optimizer.has_groups = false;
  encoded = EncodeCheckpoint(missing);
  ASSERT_FALSE(encoded);
  EXPECT_EQ(encoded.error().code(), ErrorCode::kOptimizerNames);

  Checkpoint decay = base;
  decay.optimizer.config.weight_decay = 200.0;  // lr · wd = 8
  encoded = EncodeCheckpoint(decay);
  ASSERT_FALSE(encoded);
  EXPECT_EQ(
      encoded.error().Debug(),
      "AdamW(InvalidDecayProduct { learning_rate: 0.04, weight_decay: 200.0, product: 8.0 })");
  EXPECT_EQ(encoded.error().message(),
            "positive weight decay requires represented learning_rate * weight_decay in (0,1), got "
            "0.04 * 200 = 8");

  Checkpoint groups = base;
  groups.optimizer.no_decay_group.push_back(groups.optimizer.decay_group.back());
  encoded = EncodeCheckpoint(groups);
  ASSERT_FALSE(encoded);
  EXPECT_EQ(encoded.error().Debug(),
            "AdamW(ParameterInMultipleGroups { name: \"token_embedding.weight\" })");

  Checkpoint gqa = base;
  gqa.config.kv_heads = 1;
  encoded = EncodeCheckpoint(gqa);
  ASSERT_FALSE(encoded);
  EXPECT_EQ(encoded.error().code(), ErrorCode::kLayout);
}

class SaveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kvrt-formats-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    directory_ = pattern;
  }
  void TearDown() override {
    for (const std::string& name : Entries()) {
      const std::string path = directory_ + "/" + name;
      if (::unlink(path.c_str()) != 0) ::rmdir(path.c_str());
    }
    ::rmdir(directory_.c_str());
  }

  std::vector<std::string> Entries() const {
    std::vector<std::string> names;
    if (DIR* dir = ::opendir(directory_.c_str())) {
      while (const dirent* entry = ::readdir(dir)) {
        const std::string name = entry->d_name;
        if (name != "." && name != "..") names.push_back(name);
      }
      ::closedir(dir);
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string directory_;
};

TEST_F(SaveTest, WritesAFileThatLoadsBackIdentical) {
  const std::string path = directory_ + "/model.ckpt";
  const Checkpoint first = Load("checkpoints/ch39_trained.ckpt");
  ASSERT_TRUE(SaveCheckpointAtomic(first, path));
  EXPECT_TRUE(testing::ReadBytes(path) ==
              testing::ReadBytes(testing::FixturePath("checkpoints/ch39_trained.ckpt")));

  // Replacing an existing file leaves exactly one file and no temporary behind.
  const Checkpoint second = Load("checkpoints/ch38_loaded.ckpt");
  const Result<void> replaced = SaveCheckpointAtomic(second, path);
  ASSERT_TRUE(replaced) << replaced.error().Debug();
  EXPECT_EQ(Entries(), std::vector<std::string>{"model.ckpt"});
  const Result<Checkpoint> loaded = LoadCheckpoint(path);
  ASSERT_TRUE(loaded) << loaded.error().Debug();
  ExpectSameState(second, *loaded);
  EXPECT_TRUE(testing::ReadBytes(path) ==
              testing::ReadBytes(testing::FixturePath("checkpoints/ch38_loaded.ckpt")));
}

TEST_F(SaveTest, RelativePathsUseTheCurrentDirectory) {
  char previous[4096];
  ASSERT_NE(::getcwd(previous, sizeof previous), nullptr);
  ASSERT_EQ(::chdir(directory_.c_str()), 0);
  const Result<void> saved =
      SaveCheckpointAtomic(Load("checkpoints/ch38_loaded.ckpt"), "relative.ckpt");
  ASSERT_EQ(::chdir(previous), 0);
  ASSERT_TRUE(saved) << saved.error().Debug();
  EXPECT_EQ(Entries(), std::vector<std::string>{"relative.ckpt"});
}

TEST_F(SaveTest, FailuresWriteNothing) {
  const Checkpoint valid = Load("checkpoints/ch38_loaded.ckpt");

  Checkpoint invalid = valid;
  invalid.selected_step = 1;
  Result<void> saved = SaveCheckpointAtomic(invalid, directory_ + "/bad.ckpt");
  ASSERT_FALSE(saved);
  EXPECT_EQ(saved.error().code(), ErrorCode::kStepMismatch);

  for (const std::string& path : {std::string(""), directory_ + "/..", std::string("/")}) {
    saved = SaveCheckpointAtomic(valid, path);
    ASSERT_FALSE(saved) << path;
    EXPECT_EQ(saved.error().Debug(), "Layout(\"checkpoint destination has no file name\")") << path;
  }

  saved = SaveCheckpointAtomic(valid, directory_ + "/missing/x.ckpt");
  ASSERT_FALSE(saved);
  EXPECT_EQ(saved.error().code(), ErrorCode::kIo);
  const FieldValue* operation = saved.error().Field("operation");
  ASSERT_NE(operation, nullptr);
  EXPECT_EQ(std::get<std::string>(*operation), "create temporary");

  // Renaming over a non-empty directory fails after the temporary was written;
  // the temporary is removed again.
  ASSERT_EQ(::mkdir((directory_ + "/occupied").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((directory_ + "/occupied/child").c_str(), 0700), 0);
  saved = SaveCheckpointAtomic(valid, directory_ + "/occupied");
  ASSERT_FALSE(saved);
  EXPECT_EQ(std::get<std::string>(*saved.error().Field("operation")), "atomically replace");
  EXPECT_EQ(Entries(), std::vector<std::string>{"occupied"});
  ::rmdir((directory_ + "/occupied/child").c_str());
}

TEST(LoadTest, ReadFailuresAreIoErrorsNamingThePath) {
  const std::string path = "/nonexistent-kvrt-dir/model.ckpt";
  const Result<Checkpoint> loaded = LoadCheckpoint(path);
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().code(), ErrorCode::kIo);
  EXPECT_EQ(std::get<std::string>(*loaded.error().Field("operation")), "read");
  EXPECT_EQ(loaded.error().message(),
            "could not read checkpoint path " + path + ": No such file or directory (os error 2)");

  const Result<Checkpoint> directory = LoadCheckpoint("/tmp");
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.error().code(), ErrorCode::kIo);
}

}  // namespace
}  // namespace kvrt
