// kvrt_truncation_race MODEL.gguf ROUNDS [SCRATCH_DIR]: a host program that loads
// a GGUF file through the C API while another process truncates it.
//
// Every round copies MODEL to a scratch file and forks a host that loads it
// (kvrt_model_load), binds a session with the default engine (which packs the
// stored q8_0/f16/... tensors) and prefills one token. The parent is the other
// process: after a random delay within the host's undisturbed running time
// (measured in a first round; log-uniform from 1 ms, so that the first fraction
// of a second, when the file is read, gets its share) it truncates the copy to a
// random length. A host
// must end with exit 0 (the load completed from the bytes read before the
// truncation) or exit 3 after a typed error; a host killed by a signal (SIGBUS
// from a mapped page that vanished) fails the run. Prints one line per round and
// a summary; exits 1 when any host died.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>

#include "kvrt/kvrt.h"

namespace {

constexpr int kHostFailedWithTypedError = 3;

// The host: everything an embedder does before its first logits. A typed
// error's name goes to `report`.
int Host(const std::string& path, int report) {
  kvrt_model* model = nullptr;
  kvrt_cache* cache = nullptr;
  kvrt_session* session = nullptr;
  kvrt_error* error = kvrt_model_load(path.c_str(), &model);
  if (error == nullptr) error = kvrt_cache_create(model, 0, KVRT_PRECISION_F32, &cache);
  if (error == nullptr) error = kvrt_session_bind(cache, model, nullptr, &session);
  const uint32_t token = 1;
  const double* logits = nullptr;
  if (error == nullptr) error = kvrt_session_prefill(session, &token, 1, &logits);
  kvrt_session_free(session);
  kvrt_cache_free(cache);
  kvrt_model_free(model);
  if (error == nullptr) return 0;
  const std::string name = kvrt_error_name(error);
  kvrt_error_free(error);
  if (::write(report, name.data(), name.size()) < 0) return 4;
  return kHostFailedWithTypedError;
}

struct Outcome {
  std::string text;  // "completed", "typed error Truncated", "killed by signal N", "exit N"
  bool survived = false;
};

// Forks the host on `path`; `truncate_after` (when set) truncates the file to
// `length` bytes after that delay, while the host runs.
Outcome RunRound(const std::string& path, std::chrono::microseconds truncate_after, off_t length,
                 bool truncate_file) {
  int report[2];
  if (::pipe(report) != 0) return {"no pipe", false};
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(report[0]);
    ::_exit(Host(path, report[1]));
  }
  ::close(report[1]);
  if (truncate_file) {
    std::this_thread::sleep_for(truncate_after);
    if (::truncate(path.c_str(), length) != 0) std::perror("truncate");
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  char name[128] = {};
  const ssize_t got = ::read(report[0], name, sizeof name - 1);
  ::close(report[0]);
  if (WIFSIGNALED(status)) return {"killed by signal " + std::to_string(WTERMSIG(status)), false};
  const int code = WEXITSTATUS(status);
  if (code == 0) return {"completed", true};
  if (code == kHostFailedWithTypedError) return {"typed error " + std::string(name, got > 0 ? got : 0), true};
  return {"exit " + std::to_string(code), false};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.gguf ROUNDS [SCRATCH_DIR]\n", argv[0]);
    return 2;
  }
  namespace fs = std::filesystem;
  const fs::path model = argv[1];
  const int rounds = std::atoi(argv[2]);
  const fs::path scratch = argc > 3 ? fs::path(argv[3]) : fs::temp_directory_path();
  const fs::path copy = scratch / ("kvrt-truncation-race-" + std::to_string(::getpid()) + ".gguf");
  const off_t size = static_cast<off_t>(fs::file_size(model));

  // The host's running time with nothing in its way bounds the delays.
  fs::copy_file(model, copy, fs::copy_options::overwrite_existing);
  const auto start = std::chrono::steady_clock::now();
  const Outcome calm = RunRound(copy.string(), {}, 0, false);
  const auto calm_time =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
  std::printf("undisturbed host: %s in %.3f s\n", calm.text.c_str(), calm_time.count() / 1e6);
  if (!calm.survived || calm.text != "completed") return 1;

  std::mt19937_64 rng(0x6b767274);
  std::map<std::string, int> counts;
  int survived = 0;
  for (int round = 1; round <= rounds; ++round) {
    fs::copy_file(model, copy, fs::copy_options::overwrite_existing);
    const double fraction = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    const double longest = std::max<double>(calm_time.count(), 1000.0);
    const std::chrono::microseconds delay(static_cast<int64_t>(1000.0 * std::pow(longest / 1000.0, fraction)));
    const off_t length = static_cast<off_t>(rng() % static_cast<uint64_t>(size));
    const Outcome outcome = RunRound(copy.string(), delay, length, true);
    std::printf("round %2d: truncated to %lld bytes after %.3f s: %s\n", round,
                static_cast<long long>(length), delay.count() / 1e6, outcome.text.c_str());
    std::fflush(stdout);
    ++counts[outcome.text];
    if (outcome.survived) ++survived;
  }
  fs::remove(copy);
  std::printf("%d/%d hosts survived", survived, rounds);
  for (const auto& [text, count] : counts) std::printf("; %s: %d", text.c_str(), count);
  std::printf("\n");
  return survived == rounds ? 0 : 1;
}
