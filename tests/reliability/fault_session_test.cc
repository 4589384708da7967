// Allocation faults in the cache and session API (spec/kv-cache.md §3): every
// allocation of DecoderKvCache::Create, Clone, Bind, Prefill and Decode, on the
// reference and the fast engine, fails once per sweep (fault_sweep.h). Each
// failure must come back as a typed error with the cache equal to its clone
// from before, the cache unbound after a failed bind, and no parameter
// revision or borrow changed. Request errors are swept too: building their
// messages allocates.
#include <gtest/gtest.h>

#include <optional>

#include "fault_state.h"
#include "fault_sweep.h"
#include "session/decoder_kv_session.h"

namespace kvrt {
namespace {

using testing::AllocationHook;
using testing::FaultCase;
using testing::Sweep;

// One model and, per attempt, a fresh cache (optionally bound and prefilled)
// with a clone to compare against.
class SessionFaultTest : public ::testing::TestWithParam<bool> {
 protected:
  SessionFaultTest() : model_(testing::FaultModel(GetParam())), parameters_(testing::StateOf(model_)) {}

  // A fresh model (so the fast engine packs its weights again: those
  // allocations belong to the first bind of a model) and a fresh cache for
  // `engine`, bound and holding `prompt` when given.
  void Prepare(const testing::EngineCase& engine, bool bind, std::vector<uint32_t> prompt = {}) {
    session_.reset();
    cache_.reset();
    model_ = testing::FaultModel(GetParam());
    parameters_ = testing::StateOf(model_);
    cache_.emplace(testing::CacheFor(model_, engine.options.precision));
    if (bind) {
      Result<DecoderKvSession> session = Bind(*cache_, model_, engine.options);
      ASSERT_TRUE(session) << session.error().Debug();
      session_.emplace(std::move(*session));
      if (!prompt.empty()) {
        ASSERT_TRUE(session_->Prefill(prompt));
      }
    }
    before_.emplace(testing::CloneOf(*cache_));
  }

  void ExpectCacheUnchanged() {
    EXPECT_TRUE(*cache_ == *before_);
    EXPECT_EQ(cache_->is_bound(), session_.has_value());
    if (!session_) {
      EXPECT_EQ(testing::StateOf(model_), parameters_);
    }
  }

  void SweepBoth(const FaultCase& fault_case) {
    for (AllocationHook hook : testing::kAllocationHooks) Sweep(fault_case, hook);
  }

  std::string Name(const testing::EngineCase& engine, const std::string& operation) const {
    return operation + "(" + engine.name + (GetParam() ? ", grouped" : "") + ")";
  }

  DecoderModel model_;
  testing::ParameterState parameters_;
  std::optional<DecoderKvCache> cache_;
  std::optional<DecoderKvCache> before_;
  std::optional<DecoderKvSession> session_;
};

TEST_P(SessionFaultTest, CreateAndClone) {
  for (Precision precision : {Precision::kF64, Precision::kF32}) {
    FaultCase create;
    create.name = std::string("DecoderKvCache::Create(") + std::string(PrecisionName(precision)) + ")";
    create.prepare = [] {};
    create.run = [&]() -> std::optional<Error> {
      CacheOptions options;
      options.precision = precision;
      Result<DecoderKvCache> cache = DecoderKvCache::Create(model_, options);
      if (!cache) return cache.error();
      return std::nullopt;
    };
    create.expect_unchanged = [&] { EXPECT_EQ(testing::StateOf(model_), parameters_); };
    SweepBoth(create);

    FaultCase clone;
    clone.name = std::string("DecoderKvCache::Clone(") + std::string(PrecisionName(precision)) + ")";
    clone.prepare = [&] {
      Prepare({"", {Backend::kFast, precision, 0, nullptr}}, true, {1, 2});
      session_.reset();  // a clone of a populated, unbound cache
    };
    clone.run = [&]() -> std::optional<Error> {
      Result<DecoderKvCache> copy = cache_->Clone();
      if (!copy) return copy.error();
      EXPECT_TRUE(*copy == *cache_);
      return std::nullopt;
    };
    clone.expect_unchanged = [&] { ExpectCacheUnchanged(); };
    SweepBoth(clone);
  }
}

TEST_P(SessionFaultTest, Bind) {
  for (const testing::EngineCase& engine : testing::AllEngines()) {
    FaultCase bind;
    bind.name = Name(engine, "Bind");
    bind.prepare = [&] { Prepare(engine, false); };
    bind.run = [&]() -> std::optional<Error> {
      Result<DecoderKvSession> session = Bind(*cache_, model_, engine.options);
      if (!session) return session.error();
      session_.emplace(std::move(*session));
      return std::nullopt;
    };
    bind.expect_unchanged = [&] { ExpectCacheUnchanged(); };
    bind.expect_succeeded = [&] {
      EXPECT_TRUE(cache_->is_bound());
      session_.reset();
      EXPECT_EQ(testing::StateOf(model_), parameters_);  // borrows released again
    };
    SweepBoth(bind);
  }
}

TEST_P(SessionFaultTest, PrefillAndDecode) {
  for (const testing::EngineCase& engine : testing::AllEngines()) {
    FaultCase prefill;
    prefill.name = Name(engine, "Prefill");
    prefill.prepare = [&] { Prepare(engine, true); };
    prefill.run = [&]() -> std::optional<Error> {
      const uint32_t prompt[] = {1, 2, 3};  // no allocation of the test's own in the sweep
      Result<StepOutput> step = session_->Prefill(prompt);
      if (!step) return step.error();
      EXPECT_EQ(cache_->len(), 3u);
      return std::nullopt;
    };
    prefill.expect_unchanged = [&] { ExpectCacheUnchanged(); };
    SweepBoth(prefill);

    FaultCase decode;
    decode.name = Name(engine, "Decode");
    decode.prepare = [&] { Prepare(engine, true, {1, 2}); };
    decode.run = [&]() -> std::optional<Error> {
      Result<StepOutput> step = session_->Decode(3);
      if (!step) return step.error();
      EXPECT_EQ(cache_->len(), 3u);
      return std::nullopt;
    };
    decode.expect_unchanged = [&] { ExpectCacheUnchanged(); };
    SweepBoth(decode);
  }
}

// Rejections build their error messages on the heap; a failure there must still
// be a typed error, and the cache must still be unchanged.
TEST_P(SessionFaultTest, RejectedRequests) {
  const testing::EngineCase engine = testing::AllEngines()[1];
  struct Rejection {
    const char* name;
    std::vector<uint32_t> prompt;  // prefilled before the call
    std::function<Result<StepOutput>(DecoderKvSession&)> call;
  };
  // Arguments are built before the sweep window: only the API's allocations count.
  const uint32_t bad_prompt[] = {0, static_cast<uint32_t>(model_.config().vocabulary_size)};
  const uint32_t one[] = {1};
  const std::vector<Rejection> rejections = {
      {"Prefill(token out of range)", {}, [&](DecoderKvSession& s) { return s.Prefill(bad_prompt); }},
      {"Prefill(not empty)", {1}, [&](DecoderKvSession& s) { return s.Prefill(one); }},
      {"Decode(before prefill)", {}, [](DecoderKvSession& s) { return s.Decode(1); }},
      {"Decode(full)", std::vector<uint32_t>(model_.config().max_positions, 1),
       [](DecoderKvSession& s) { return s.Decode(1); }},
  };
  for (const Rejection& rejection : rejections) {
    FaultCase fault_case;
    fault_case.name = Name(engine, rejection.name);
    fault_case.prepare = [&] { Prepare(engine, true, rejection.prompt); };
    // The clean run is the rejection itself; report it as "success" so the sweep
    // counts its allocations, and check the error every time.
    fault_case.run = [&]() -> std::optional<Error> {
      Result<StepOutput> step = rejection.call(*session_);
      EXPECT_FALSE(step);
      if (step) return std::nullopt;
      if (!step.error().Has(ErrorCode::kAllocationFailed)) return std::nullopt;
      return step.error();
    };
    fault_case.expect_unchanged = [&] { ExpectCacheUnchanged(); };
    fault_case.expect_succeeded = [&] { ExpectCacheUnchanged(); };
    Sweep(fault_case, AllocationHook::kHeap);
  }

  FaultCase stale;
  stale.name = Name(engine, "Bind(stale cache)");
  stale.prepare = [&] {
    session_.reset();
    cache_.reset();
    DecoderModel copy = model_;
    cache_.emplace(testing::CacheFor(copy, engine.options.precision));
    const std::vector<ParameterUpdate> update = {{0, testing::ValuesOf(model_)[0]}};
    ASSERT_TRUE(copy.UpdateParameters(update));
    before_.emplace(testing::CloneOf(*cache_));
    parameters_ = testing::StateOf(model_);
  };
  stale.run = [&]() -> std::optional<Error> {
    Result<DecoderKvSession> session = Bind(*cache_, model_, engine.options);
    EXPECT_FALSE(session);
    if (!session && session.error().code() != ErrorCode::kModelParameterRevisionMismatch) {
      return session.error();
    }
    return std::nullopt;
  };
  stale.expect_unchanged = [&] { ExpectCacheUnchanged(); };
  stale.expect_succeeded = [&] { ExpectCacheUnchanged(); };
  Sweep(stale, AllocationHook::kHeap);
}

INSTANTIATE_TEST_SUITE_P(Models, SessionFaultTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param_info) {
                           return param_info.param ? "GroupedUntied" : "Ch38Geometry";
                         });

}  // namespace
}  // namespace kvrt
