// One C session, or one sampler, entered from two threads at once (issue 38:
// SIGSEGV, 3 runs out of 3). Handles are not synchronized, but a session and a
// sampler detect a second concurrent entry with an atomic flag and refuses it with ConcurrentUse instead of letting
// two calls corrupt its state. The threads run in a forked child, so that a
// crash fails the test instead of killing the test binary.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "kvrt/kvrt.h"
#include "test_support.h"

namespace kvrt {
namespace {

const std::string kModel = testing::FixturePath("llama2c/gqa_untied.bin");

struct Counts {
  std::atomic<int> succeeded{0};
  std::atomic<int> concurrent{0};
  std::atomic<int> other{0};  // typed errors of the session's own state (Full, ...)
};

void Count(kvrt_error* error, Counts& counts) {
  if (error == nullptr) {
    ++counts.succeeded;
  } else if (kvrt_error_code(error) == KVRT_ERR_CONCURRENT_USE) {
    ++counts.concurrent;
  } else {
    ++counts.other;
  }
  kvrt_error_free(error);
}

// Two threads prefill, decode, step and reset one session for a while. Exit 0
// when every call returned and at least one was refused as concurrent.
int HammerOneSession() {
  kvrt_model* model = nullptr;
  kvrt_cache* cache = nullptr;
  kvrt_session* session = nullptr;
  if (kvrt_model_load(kModel.c_str(), &model) != nullptr) return 10;
  if (kvrt_cache_create(model, 0, KVRT_PRECISION_F32, &cache) != nullptr) return 11;
  if (kvrt_session_bind(cache, model, nullptr, &session) != nullptr) return 12;
  Counts counts;
  std::barrier start(2);
  auto work = [&](uint32_t salt) {
    start.arrive_and_wait();
    const uint32_t prompt[] = {1, 2 + salt, 3, 4, 5, 6, 7, 8};
    for (int round = 0; round < 300; ++round) {
      const double* logits = nullptr;
      const float* narrow = nullptr;
      kvrt_session_reset(session);
      Count(kvrt_session_prefill(session, prompt, 8, &logits), counts);
      Count(kvrt_session_decode(session, 9 + salt, &logits), counts);
      Count(kvrt_session_decode_f32(session, 10, &narrow), counts);
      const kvrt_slot_run run = {0, prompt, 1, KVRT_RUN_DECODE, 1};
      const double* step_logits = nullptr;
      Count(kvrt_session_step(session, &run, 1, &step_logits), counts);
      Count(kvrt_session_truncate_slot(session, 0, 1), counts);
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  kvrt_session_free(session);
  kvrt_cache_free(cache);
  kvrt_model_free(model);
  std::printf("[ c api ] %d calls succeeded, %d refused as concurrent, %d other typed errors\n",
              counts.succeeded.load(), counts.concurrent.load(), counts.other.load());
  std::fflush(stdout);
  return counts.concurrent.load() > 0 && counts.succeeded.load() > 0 ? 0 : 20;
}

TEST(CApiConcurrency, ASecondThreadInsideOneSessionGetsConcurrentUse) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(HammerOneSession());
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_FALSE(WIFSIGNALED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Two threads sample, accept and reset one sampler (a hand-written decode loop
// shared by mistake). Exit 0 when every call returned and at least one was
// refused as concurrent; the rounds stop early once one was.
int HammerOneSampler() {
  constexpr size_t kVocabulary = 32000;
  kvrt_sampler_params params = kvrt_sampler_params_default();
  params.temperature = 0.8;
  params.top_p = 0.9;
  params.repeat_penalty = 1.1;
  params.seed = 7;
  kvrt_sampler* sampler = nullptr;
  if (kvrt_sampler_create(&params, kVocabulary, &sampler) != nullptr) return 10;
  std::vector<double> logits(kVocabulary);
  for (size_t i = 0; i < kVocabulary; ++i) logits[i] = static_cast<double>((i * 7919) % 1000) / 100.0;
  Counts counts;
  std::barrier start(2);
  auto work = [&] {
    start.arrive_and_wait();
    for (int round = 0; round < 20000 && (round < 50 || counts.concurrent.load() == 0); ++round) {
      uint32_t token = 0;
      Count(kvrt_sampler_sample(sampler, logits.data(), logits.size(), &token), counts);
      Count(kvrt_sampler_accept(sampler, token), counts);
      if (round % 16 == 0) kvrt_sampler_reset(sampler);
    }
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  kvrt_sampler_free(sampler);
  std::printf("[ c api ] sampler: %d calls succeeded, %d refused as concurrent, %d other typed errors\n",
              counts.succeeded.load(), counts.concurrent.load(), counts.other.load());
  std::fflush(stdout);
  return counts.concurrent.load() > 0 && counts.succeeded.load() > 0 && counts.other.load() == 0 ? 0 : 20;
}

TEST(CApiConcurrency, ASecondThreadInsideOneSamplerGetsConcurrentUse) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(HammerOneSampler());
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_FALSE(WIFSIGNALED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(CApiConcurrency, TheCodeHasAStableNumberAndName) {
  EXPECT_EQ(KVRT_ERR_CONCURRENT_USE, 198);
  EXPECT_STREQ(kvrt_error_code_name(KVRT_ERR_CONCURRENT_USE), "ConcurrentUse");
}

}  // namespace
}  // namespace kvrt
