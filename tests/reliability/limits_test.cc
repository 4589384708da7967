// Reliability under real limits, each a reproduction of a failure that used to
// abort, hang or exhaust memory:
//   * an address-space limit (setrlimit RLIMIT_AS in a forked child): kvrt synth
//     of a 16 GiB model exits 2 with one `error:` line instead of abort()ing;
//   * a FIFO, a directory and character devices given to every loader come back
//     as NotRegularFile at once (in a forked child behind alarm());
//   * a prompt longer than the fast engine's step prefills in chunks with the
//     logits of one step, and a failing chunk commits nothing;
//   * a 2^20-position context decodes in bounded memory (getrusage in a child);
//   * a tokenizer.bin of millions of empty records is rejected without decoding
//     them; a long prompt encodes in linear-ish time;
//   * one cache bound from 8 threads at once, 10,000 times: one bind wins each round.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "formats/llama2c/llama2c.h"
#include "formats/llmcp35/checkpoint.h"
#include "formats/gguf/gguf_file.h"
#include "core/buffer.h"
#include "kv/decoder_kv_cache.h"
#include "kvrt/load_model.h"
#include "model/decoder_model.h"
#include "session/owned_session.h"
#include "kvrt/tokenizer.h"
#include "tokenizer/llama2c_encoding.h"

#include "test_support.h"  // KVRT_SANITIZER_BUILD

namespace kvrt {
namespace {

namespace fs = std::filesystem;

fs::path ScratchDir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("kvrt-limits-" + name + "-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

// Runs `body` in a forked child with `seconds` of alarm; returns its exit
// status, or 128 + signal when it was killed (SIGALRM: it hung).
int InChild(unsigned seconds, const std::function<int()>& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(seconds);
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

// Peak RSS of the calling process, in bytes.
uint64_t PeakRssBytes() {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;
}

// ---------------------------------------------------------------------------
// Files that are not regular files.

int ExpectNotRegular(const Result<void>& result, const char* kind) {
  if (result) return 10;
  if (result.error().code() != ErrorCode::kNotRegularFile) {
    std::fprintf(stderr, "%s: %s\n", kind, result.error().message().c_str());
    return 11;
  }
  if (result.error().message().find(kind) == std::string::npos) {
    std::fprintf(stderr, "expected '%s' in: %s\n", kind, result.error().message().c_str());
    return 12;
  }
  return 0;
}

template <class T>
Result<void> Drop(Result<T> result) {
  if (!result) return Fail(std::move(result.error()));
  return {};
}

// Every loader that takes a path.
std::vector<std::function<Result<void>(const std::string&)>> Loaders() {
  return {
      [](const std::string& p) { return Drop(LoadModel(p)); },
      [](const std::string& p) { return Drop(LoadLlama2cModel(p)); },
      [](const std::string& p) { return Drop(ReadLlama2cTokenizer(p)); },
      [](const std::string& p) { return Drop(LoadLlama2cTokenizer(p, 300)); },
      [](const std::string& p) { return Drop(gguf::GgufFile::Open(p)); },
  };
}

TEST(Limits, LoadersRejectFifosDirectoriesAndDevicesWithoutBlocking) {
  const fs::path dir = ScratchDir("fifo");
  const std::string fifo = (dir / "model.bin").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::pair<std::string, const char*>> paths = {
      {fifo, "a FIFO"},
      {dir.string(), "a directory"},
      {"/dev/null", "a character device"},
      {"/dev/zero", "a character device"},
  };
  // A loader that opened the FIFO for reading would wait for a writer forever,
  // and one that read /dev/zero would never reach its end: alarm() kills it.
  const int status = InChild(20, [&] {
    for (const auto& [path, kind] : paths) {
      for (const auto& load : Loaders()) {
        if (int failed = ExpectNotRegular(load(path), kind); failed != 0) return failed;
      }
      if (path == dir.string()) continue;
      if (int failed = ExpectNotRegular(Drop(LoadCheckpoint(path)), kind); failed != 0) return failed;
    }
    return 0;
  });
  EXPECT_EQ(status, 0) << (status == 128 + SIGALRM ? "a loader blocked" : "a loader misreported");
  // LLMCP35 keeps the reference crate's error for a directory: Io (EISDIR).
  const Result<Checkpoint> directory = LoadCheckpoint(dir.string());
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.error().code(), ErrorCode::kIo);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------
// The CLI under an address-space limit.

#ifndef KVRT_SANITIZER_BUILD
TEST(Limits, SynthUnderAnAddressSpaceLimitFailsWithOneErrorLine) {
  const fs::path dir = ScratchDir("rlimit");
  const std::string out = (dir / "x.ckpt").string(), err = (dir / "stderr").string();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    struct rlimit limit {};
    limit.rlim_cur = limit.rlim_max = rlim_t{2} << 30;
    ::setrlimit(RLIMIT_AS, &limit);
    ::alarm(120);
    std::freopen(err.c_str(), "w", stderr);
    ::execl(KVRT_CLI_PATH, KVRT_CLI_PATH, "synth", "--dim", "65536", "--layers", "1", "--heads", "1",
            "--ffn", "65536", "--vocab", "300", "--seq-len", "2", "--llmcp35", out.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::ifstream in(err);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status) << "\n" << text;
  EXPECT_EQ(WEXITSTATUS(status), 2) << text;
  EXPECT_EQ(text.rfind("error: ", 0), 0u) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(dir);
}
#endif

// ---------------------------------------------------------------------------
// Chunked prefill.

DecoderModel ChunkModel(size_t positions, bool tied = true) {
  ModelConfig config = ModelConfig::Create(300, 32, 4, 64, 2, positions, 10000.0, 1e-5);
  config.kv_heads = 2;
  config.tied_output = tied;
  SplitMix64 rng(5);
  return *DecoderModel::FromSeed(config, rng);
}

std::vector<uint32_t> Prompt(size_t length, size_t vocabulary) {
  std::vector<uint32_t> prompt(length);
  SplitMix64 rng(9);
  for (uint32_t& t : prompt) t = static_cast<uint32_t>(3 + rng.NextU64() % (vocabulary - 3));
  return prompt;
}

struct PrefillRun {
  std::vector<double> prefill_logits, decode_logits;
  KvWork work;
  size_t len = 0;
};

PrefillRun PrefillAndDecode(const DecoderModel& model, Precision precision, size_t max_rows,
                     const std::vector<uint32_t>& prompt) {
  CacheOptions cache_options;
  cache_options.precision = precision;
  DecoderKvCache cache = *DecoderKvCache::Create(model, cache_options);
  EngineOptions engine;
  engine.precision = precision;
  engine.max_rows_per_step = max_rows;
  Result<DecoderKvSession> session = Bind(cache, model, engine);
  EXPECT_TRUE(session) << session.error().message();
  PrefillRun run;
  Result<StepOutput> prefill = session->Prefill(prompt);
  EXPECT_TRUE(prefill) << prefill.error().message();
  run.prefill_logits.assign(prefill->logits.begin(), prefill->logits.end());
  Result<StepOutput> decode = session->Decode(prompt.front());
  EXPECT_TRUE(decode) << decode.error().message();
  run.decode_logits.assign(decode->logits.begin(), decode->logits.end());
  run.work = cache.work();
  run.len = cache.len();
  return run;
}

TEST(Limits, ChunkedPrefillGivesTheLogitsOfOneStep) {
  const DecoderModel model = ChunkModel(512);
  const std::vector<uint32_t> prompt = Prompt(300, model.config().vocabulary_size);
  for (const Precision precision : {Precision::kF32, Precision::kF64}) {
    const PrefillRun whole = PrefillAndDecode(model, precision, 512, prompt);
    // Chunks of 64 and 128 rows, and 7 (query tiles not aligned with chunks):
    // the kernels compute each element in the same order whatever the step's
    // row count, so the logits are bit-identical.
    for (const size_t rows : {64, 128, 7}) {
      const PrefillRun chunked = PrefillAndDecode(model, precision, rows, prompt);
      EXPECT_EQ(chunked.prefill_logits, whole.prefill_logits) << rows << " rows per step";
      EXPECT_EQ(chunked.decode_logits, whole.decode_logits) << rows << " rows per step";
      EXPECT_EQ(chunked.work, whole.work);
      EXPECT_EQ(chunked.len, whole.len);
    }
    // A last chunk of one row runs the decode kernels (matrix-vector products):
    // equal within the fast engine's tolerance, not bit for bit.
    const PrefillRun single_tail = PrefillAndDecode(model, precision, 299, prompt);
    const double tolerance = precision == Precision::kF32 ? 1e-4 : 1e-12;
    for (size_t i = 0; i < whole.prefill_logits.size(); ++i) {
      EXPECT_NEAR(single_tail.prefill_logits[i], whole.prefill_logits[i], tolerance) << i;
    }
    EXPECT_EQ(single_tail.work, whole.work);
  }
}

TEST(Limits, AFailingChunkCommitsNothing) {
  DecoderModel model = ChunkModel(512, /*tied=*/false);  // only the poisoned row fails
  std::vector<uint32_t> prompt = Prompt(200, model.config().vocabulary_size);
  const uint32_t poisoned = 299;
  for (uint32_t& t : prompt) t = t == poisoned ? 298 : t;
  prompt[150] = poisoned;  // in the third chunk of 64 rows
  // Finite in f64, infinite in f32: the fast f32 engine fails on that row.
  const size_t d = model.config().model_width;
  std::vector<double> embedding(model.parameters().front()->values().begin(),
                                model.parameters().front()->values().end());
  for (size_t k = 0; k < d; ++k) embedding[poisoned * d + k] = 1e300;
  ASSERT_TRUE(model.UpdateParameters(std::vector<ParameterUpdate>{{0, embedding}}));

  DecoderKvCache cache = *DecoderKvCache::Create(model);
  EngineOptions engine;
  engine.max_rows_per_step = 64;
  Result<DecoderKvSession> session = Bind(cache, model, engine);
  ASSERT_TRUE(session);
  Result<StepOutput> failed = session->Prefill(prompt);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code(), ErrorCode::kIncrementalAttention) << failed.error().message();
  EXPECT_EQ(cache.len(), 0u);  // the two good chunks did not become visible
  EXPECT_EQ(cache.work(), KvWork{});
  for (size_t l = 0; l < cache.layer_count(); ++l) EXPECT_EQ(cache.layer(l)->len(), 0u);
  // The session is usable: a good prompt prefills as on a fresh cache.
  prompt[150] = 7;
  Result<StepOutput> good = session->Prefill(prompt);
  ASSERT_TRUE(good) << good.error().message();
  EXPECT_EQ(cache.len(), prompt.size());
}

// ---------------------------------------------------------------------------
// Memory bounded by use, not by the declared context.

#ifndef KVRT_SANITIZER_BUILD
TEST(Limits, AMillionPositionContextDecodesInBoundedMemory) {
  const int status = InChild(120, [] {
    ModelConfig config = ModelConfig::Create(300, 64, 4, 128, 1, size_t{1} << 20, 10000.0, 1e-5);
    SplitMix64 rng(3);
    Result<DecoderModel> model = DecoderModel::FromSeed(config, rng);
    if (!model) return 1;
    Result<OwnedSession> session = OwnedSession::Open(*model, EngineOptions{});
    if (!session) return 2;
    const std::vector<uint32_t> prompt = {1, 5, 9};
    if (!session->session().Prefill(prompt)) return 3;
    if (!session->session().Decode(4) || !session->session().Decode(8)) return 4;
    const uint64_t peak = PeakRssBytes();
    std::fprintf(stderr, "peak RSS %.1f MB\n", static_cast<double>(peak) / 1e6);
    return peak < (uint64_t{200} << 20) ? 0 : 5;
  });
  EXPECT_EQ(status, 0);
}

// The VmFlags of the mapping holding `address` in /proc/self/smaps ("" when none
// does): "hg" marks a region madvise(MADV_HUGEPAGE)d. `begin`/`end` get its range.
std::string MappingFlags(const void* address, uintptr_t* begin, uintptr_t* end) {
  std::ifstream smaps("/proc/self/smaps");
  const auto target = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long from = 0, to = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &from, &to) == 2) {  // a mapping's first line
      inside = from <= target && target < to;
      if (inside) {
        *begin = from;
        *end = to;
      }
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

bool HasFlag(const std::string& flags, const std::string& flag) {
  std::istringstream words(flags);
  for (std::string word; words >> word;) {
    if (word == flag) return true;
  }
  return false;
}

// Weights ask for transparent huge pages on a 2 MiB boundary and keep the size
// they asked for (the slack of the aligned mapping is returned); caches and
// workspaces keep small pages backed on first touch.
TEST(Limits, WeightBuffersAskForHugePagesAndKeepTheirSize) {
  if (!fs::exists("/sys/kernel/mm/transparent_hugepage/enabled")) {
    GTEST_SKIP() << "this kernel has no transparent huge pages";
  }
  constexpr size_t kHugePage = size_t{1} << 21;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t bytes = 5 * kHugePage + 123;
  const size_t count = bytes / sizeof(float);
  std::optional<Buffer<float>> weights = Buffer<float>::Allocate(count, Pages::kHuge);
  std::optional<Buffer<float>> cache = Buffer<float>::Allocate(count);
  ASSERT_TRUE(weights && cache);
  const float* data = weights->data();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % kHugePage, 0u);
  EXPECT_EQ(data[0], 0.0f);
  EXPECT_EQ(data[count - 1], 0.0f);
  std::fill_n(weights->data(), count, 1.0f);  // every byte of the request is mapped

  uintptr_t begin = 0, end = 0;
  const std::string flags = MappingFlags(data, &begin, &end);
  ASSERT_FALSE(flags.empty()) << "no mapping holds the weights";
  EXPECT_TRUE(HasFlag(flags, "hg")) << flags;
  // The mapping ends where the request does, rounded to a small page (a
  // neighbouring mapping with the same flags could only extend it downwards).
  EXPECT_EQ(end, reinterpret_cast<uintptr_t>(data) + (count * sizeof(float) + page - 1) / page * page);
  EXPECT_LE(begin, reinterpret_cast<uintptr_t>(data));

  const std::string cache_flags = MappingFlags(cache->data(), &begin, &end);
  ASSERT_FALSE(cache_flags.empty());
  EXPECT_FALSE(HasFlag(cache_flags, "hg")) << cache_flags;

  // Small requests of either kind stay on the heap, as before.
  std::optional<Buffer<float>> small = Buffer<float>::Allocate(1000, Pages::kHuge);
  ASSERT_TRUE(small);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small->data()) % kBufferAlignment, 0u);
}

TEST(Limits, ATokenizerOfMillionsOfEmptyRecordsIsRejectedCheaply) {
  const fs::path dir = ScratchDir("tokenizer");
  const std::string path = (dir / "tokenizer.bin").string();
  const size_t records = size_t{10} << 20;  // 80 MiB of empty records
  {
    std::vector<uint8_t> bytes(4 + records * 8, 0);
    bytes[0] = 16;  // max_token_length
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  const int status = InChild(60, [&] {
    Result<Tokenizer> tokenizer = LoadLlama2cTokenizer(path, 300);
    if (tokenizer || tokenizer.error().code() != ErrorCode::kVocabularyMismatch) return 1;
    if (tokenizer.error().U64("tokenizer") != records) return 2;
    const uint64_t peak = PeakRssBytes();
    std::fprintf(stderr, "peak RSS %.1f MB\n", static_cast<double>(peak) / 1e6);
    // Read through a 1 MiB window, 300 pieces kept: neither the file's bytes
    // nor anything per record (4.5 bytes of vector and string per byte of file
    // before, plus the file itself).
    return peak < (uint64_t{32} << 20) ? 0 : 3;
  });
  EXPECT_EQ(status, 0);
  fs::remove_all(dir);
}
#endif

// run.c's merge loop as kvrt ran it before (rescan every pair after each merge).
std::vector<uint32_t> QuadraticMerges(std::span<const std::string> pieces, std::span<const float> scores,
                                      std::span<const uint32_t> sorted_ids, std::vector<uint32_t> tokens) {
  auto merge_of = [&](size_t i) {
    return llama2c::FindPiece(pieces, sorted_ids, pieces[tokens[i]] + pieces[tokens[i + 1]]);
  };
  std::vector<std::optional<uint32_t>> merged;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) merged.push_back(merge_of(i));
  while (true) {
    float best_score = -1e10f;
    std::optional<size_t> best;
    for (size_t i = 0; i < merged.size(); ++i) {
      if (merged[i] && scores[*merged[i]] > best_score) {
        best_score = scores[*merged[i]];
        best = i;
      }
    }
    if (!best) break;
    const size_t at = *best;
    tokens[at] = *merged[at];
    tokens.erase(tokens.begin() + static_cast<std::ptrdiff_t>(at) + 1);
    merged.erase(merged.begin() + static_cast<std::ptrdiff_t>(at));
    if (at > 0) merged[at - 1] = merge_of(at - 1);
    if (at + 1 < tokens.size()) merged[at] = merge_of(at);
  }
  return tokens;
}

TEST(Limits, LlamaEncodingMergesAsTheQuadraticLoopDid) {
  Result<Tokenizer> tokenizer = ReadLlama2cTokenizer(std::string(KVRT_FIXTURES_DIR) + "/llama2c/tokenizer.bin");
  ASSERT_TRUE(tokenizer);
  const std::span<const std::string> pieces = tokenizer->pieces();
  const std::span<const float> scores = tokenizer->scores();
  const std::vector<uint32_t> sorted = llama2c::SortPieceIds(pieces);
  SplitMix64 rng(17);
  const std::string alphabet = "  aeiouaeiou tnshrdl.,!\nTOé€x";
  for (size_t trial = 0; trial < 300; ++trial) {
    std::string text;
    const size_t length = rng.NextU64() % 200;
    for (size_t i = 0; i < length; ++i) text += alphabet[rng.NextU64() % alphabet.size()];
    if (trial % 3 == 0) text = std::string(length, 'a');  // long runs of equal-score ties
    const std::vector<uint32_t> fast = llama2c::Encode(pieces, scores, sorted, text);
    // Encode without merges: every code point with byte fallback, as Encode
    // begins; the singles of a text are the merge input of that text.
    std::vector<uint32_t> singles;
    if (!text.empty()) singles.push_back(*llama2c::FindPiece(pieces, sorted, " "));
    for (size_t start = 0; start < text.size();) {
      size_t end = start + 1;
      while (end < text.size() && (static_cast<uint8_t>(text[end]) & 0xC0) == 0x80 && end - start < 4) ++end;
      const std::string_view code_point = std::string_view(text).substr(start, end - start);
      if (auto id = llama2c::FindPiece(pieces, sorted, code_point)) {
        singles.push_back(*id);
      } else {
        for (char byte : code_point) singles.push_back(static_cast<uint8_t>(byte) + llama2c::kFirstByteId);
      }
      start = end;
    }
    EXPECT_EQ(fast, QuadraticMerges(pieces, scores, sorted, singles)) << text;
  }
}

TEST(Limits, ALongPromptEncodesInLinearishTime) {
  Result<Tokenizer> tokenizer = ReadLlama2cTokenizer(std::string(KVRT_FIXTURES_DIR) + "/llama2c/tokenizer.bin");
  ASSERT_TRUE(tokenizer);
  const std::vector<uint32_t> sorted = llama2c::SortPieceIds(tokenizer->pieces());
  std::string text;
  while (text.size() < 100000) text += "Once upon a time, there was a little girl. ";
  const auto begin = std::chrono::steady_clock::now();
  const std::vector<uint32_t> ids = llama2c::Encode(tokenizer->pieces(), tokenizer->scores(), sorted, text);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  std::fprintf(stderr, "encoded %zu bytes into %zu tokens in %.3f s\n", text.size(), ids.size(), seconds);
  EXPECT_FALSE(ids.empty());
  EXPECT_LT(seconds, 1.0);  // the quadratic merge loop took about 8 s
}

// ---------------------------------------------------------------------------
// Concurrent binds.

TEST(Limits, EightThreadsBindingOneCacheTenThousandTimesOneWinsEachRound) {
  ModelConfig config = ModelConfig::Create(16, 8, 2, 8, 1, 4, 10000.0, 1e-5);
  SplitMix64 rng(1);
  const DecoderModel model = *DecoderModel::FromSeed(config, rng);
  DecoderKvCache cache = *DecoderKvCache::Create(model, CacheOptions{1, 4, Precision::kF64});
  constexpr size_t kThreads = 8, kRounds = 10000;
  std::atomic<size_t> wins{0}, already_bound{0}, other{0};
  std::atomic<size_t> bad_rounds{0};
  std::atomic<size_t> round_wins{0};
  bool after_binds = true;  // the barrier's phases alternate: binds done, sessions ended
  std::barrier sync(kThreads, [&]() noexcept {
    if (after_binds && round_wins.exchange(0) != 1) bad_rounds.fetch_add(1);
    after_binds = !after_binds;
  });
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (size_t round = 0; round < kRounds; ++round) {
        {
          Result<DecoderKvSession> session = Bind(cache, model, ReferenceEngine());
          if (session) {
            wins.fetch_add(1);
            round_wins.fetch_add(1);
            sync.arrive_and_wait();  // everyone tried while this session lived
          } else {
            (session.error().code() == ErrorCode::kCacheAlreadyBound ? already_bound : other)
                .fetch_add(1);
            sync.arrive_and_wait();
          }
        }  // the winner's session ends here
        sync.arrive_and_wait();  // the cache is free before the next round
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(bad_rounds.load(), 0u);
  EXPECT_EQ(other.load(), 0u);
  EXPECT_EQ(wins.load() + already_bound.load(), kThreads * kRounds);
}

}  // namespace
}  // namespace kvrt
