// A GGUF file truncated by another process while kvrt holds it (a model updated
// or downloaded in place): the host process must survive with a typed error or a
// completed load. When the loader mapped the file, the first read of a vanished
// page raised SIGBUS and killed the process, at load or later, when the first
// session packed the stored q8_0 tensors. Each case runs in a forked child, so a
// signal fails the test instead of killing the test binary.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_llama.h"
#include "formats/gguf/gguf_writer.h"
#include "formats/load_model.h"
#include "kv/decoder_kv_cache.h"
#include "model/decoder_model.h"
#include "session/decoder_kv_session.h"

namespace kvrt {
namespace {

// "exit N" or "signal N": how a forked child running `body` ended.
std::string ChildOutcome(const std::function<int()>& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "exit " + std::to_string(WEXITSTATUS(status));
}

// A q8_0 model (every matrix kept as stored, packed at the first session) of a
// few hundred KiB, so that truncating it frees whole pages of the file.
std::string WriteQ8Model(const std::string& name) {
  ModelConfig config = ModelConfig::Create(512, 64, 4, 96, 2, 32, 10000.0, 1e-5);
  SplitMix64 rng(3);
  Result<DecoderModel> model = DecoderModel::FromSeed(config, rng);
  EXPECT_TRUE(model) << model.error().Debug();
  const std::string path = ::testing::TempDir() + "/kvrt-" + name + "-" + std::to_string(::getpid()) + ".gguf";
  Result<void> saved = gguf::SaveGgufModel(*model, gguf::GgmlType::kQ8_0, path);
  EXPECT_TRUE(saved) << saved.error().Debug();
  return path;
}

// One prefill through a fresh session with the default (as-stored) weights.
int PrefillOnce(const DecoderModel& model) {
  Result<DecoderKvCache> cache = DecoderKvCache::Create(model, {});
  if (!cache) return 20;
  Result<DecoderKvSession> session = Bind(*cache, model, EngineOptions{});
  if (!session) return 21;
  const uint32_t tokens[] = {1, 2, 3};
  return session->Prefill(tokens) ? 0 : 22;
}

TEST(FileTruncation, ModelBuildsFromAFileTruncatedAfterItWasOpened) {
  const std::string path = WriteQ8Model("truncated-after-open");
  const std::string outcome = ChildOutcome([&] {
    Result<gguf::GgufFile> file = gguf::GgufFile::Open(path);
    if (!file) return 10;
    if (::truncate(path.c_str(), 4096) != 0) return 11;
    Result<DecoderModel> model = gguf::BuildLlamaModel(*file, ModelStorage::kPanelsF32);
    if (!model) return 12;
    return PrefillOnce(*model);
  });
  EXPECT_EQ(outcome, "exit 0");
  std::filesystem::remove(path);
}

// Packing the stored tensors waits for the first session, long after the load.
TEST(FileTruncation, FirstSessionPacksStoredTensorsOfAFileTruncatedAfterLoad) {
  const std::string path = WriteQ8Model("truncated-after-load");
  const std::string outcome = ChildOutcome([&] {
    Result<ModelFile> loaded = ReadModelFile(path);
    if (!loaded) return 10;
    if (::truncate(path.c_str(), 0) != 0) return 11;
    return PrefillOnce(loaded->model);
  });
  EXPECT_EQ(outcome, "exit 0");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kvrt
