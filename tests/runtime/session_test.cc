// The bound session (spec/kv-cache.md §3, §5): bind checks in order, the state
// machine, every session and bind error with the state proven unchanged (a clone
// taken before the call compares equal after it), the two-phase commit under a
// real numeric failure, parameter revisions and borrows, reset and rebind.
#include "session/decoder_kv_session.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "allocation_counter.h"
#include "kv_cache_test_access.h"
#include "kv/decoder_kv_cache.h"
#include "model/decoder_model.h"
#include "engine/reference/complete_prefix.h"

namespace kvrt {
namespace {


ModelConfig FixtureConfig() { return ModelConfig::Create(5, 4, 2, 4, 2, 4, 10000.0, 1e-6); }

DecoderModel FixtureModel() {
  SplitMix64 rng(38);
  return *DecoderModel::FromSeed(FixtureConfig(), rng);
}

DecoderKvCache NewCache(const DecoderModel& model) { return *DecoderKvCache::Create(model, CacheOptions{.precision = Precision::kF64}); }

DecoderKvCache CloneOf(const DecoderKvCache& cache) { return *cache.Clone(); }

// A model whose forward overflows only when token 3 meets itself in block 0:
// token 0 has a zero first feature, and the block-0 query and key weights are huge
// along that feature, so q·k of token 3 with itself is +inf (Probability error).
DecoderModel OverflowModel() {
  DecoderModel model = FixtureModel();
  std::vector<double> embedding(model.embedding().values().begin(),
                                model.embedding().values().end());
  embedding[0] = 0.0;
  const size_t query = BlockParameterIndex(0, BlockSlot::kQuery);
  const size_t key = BlockParameterIndex(0, BlockSlot::kKey);
  std::vector<double> wq(model.parameter(query).values().begin(),
                         model.parameter(query).values().end());
  std::vector<double> wk(model.parameter(key).values().begin(),
                         model.parameter(key).values().end());
  for (size_t out = 0; out < 4; ++out) wq[out] = wk[out] = 1e200;  // input feature 0
  const std::vector<ParameterUpdate> updates = {{0, embedding}, {query, wq}, {key, wk}};
  EXPECT_TRUE(model.UpdateParameters(updates));
  return model;
}

std::string BindError(DecoderKvCache& cache, const DecoderModel& model) {
  Result<DecoderKvSession> session = Bind(cache, model, ReferenceEngine());
  return session ? "bound" : session.error().Debug();
}

TEST(BindTest, RejectedBindsFollowTheSpecOrderAndChangeNothing) {
  const DecoderModel model = FixtureModel();
  DecoderKvCache cache = NewCache(model);
  const DecoderKvCache before = CloneOf(cache);

  const DecoderModel rebuilt = *model.RebuildFromValues();
  EXPECT_EQ(BindError(cache, rebuilt), "ModelParameterMismatch { index: 0 }");
  EXPECT_TRUE(cache == before);

  ModelConfig changed = FixtureConfig();
  changed.rms_epsilon = 2e-6;
  const DecoderModel same_nodes_new_epsilon =
      *DecoderModel::FromParameters(changed, model.parameters());
  EXPECT_EQ(BindError(cache, same_nodes_new_epsilon), "ModelConfigMismatch");
  // The config is checked before identity: a rebuilt model with a new epsilon.
  const DecoderModel rebuilt_new_epsilon =
      *DecoderModel::FromParameters(changed, rebuilt.parameters());
  EXPECT_EQ(BindError(cache, rebuilt_new_epsilon), "ModelConfigMismatch");
  EXPECT_TRUE(cache == before);

  for (size_t index : {size_t{0}, BlockParameterIndex(1, BlockSlot::kGate), size_t{19}}) {
    std::vector<ParameterPtr> nodes = model.parameters();
    nodes[index] =
        *Parameter::Create(nodes[index]->name(), nodes[index]->shape(), nodes[index]->values());
    const DecoderModel one_copy = *DecoderModel::FromParameters(FixtureConfig(), nodes);
    EXPECT_EQ(BindError(cache, one_copy),
              "ModelParameterMismatch { index: " + std::to_string(index) + " }");
  }
  EXPECT_TRUE(cache == before);

  const DecoderModel shallow_copy = model;  // shares every node: binds
  EXPECT_EQ(BindError(cache, shallow_copy), "bound");
  EXPECT_TRUE(cache == before);
}

TEST(BindTest, RevisionsArePerParameter) {
  DecoderModel model = FixtureModel();
  DecoderKvCache cache = NewCache(model);
  const std::vector<double> values(model.parameter(3).values().begin(),
                                   model.parameter(3).values().end());
  const std::vector<ParameterUpdate> update = {{3, values}};  // same numbers: still a new revision
  ASSERT_TRUE(model.UpdateParameters(update));
  EXPECT_EQ(model.parameter(3).revision(), 1u);
  EXPECT_EQ(model.parameter(2).revision(), 0u);
  const DecoderKvCache before = CloneOf(cache);
  EXPECT_EQ(BindError(cache, model),
            "ModelParameterRevisionMismatch { index: 3, cache: 0, model: 1 }");
  EXPECT_TRUE(cache == before);
}

TEST(BindTest, ACacheHasOneSessionAtATime) {
  const DecoderModel model = FixtureModel();
  DecoderKvCache cache = NewCache(model);
  {
    Result<DecoderKvSession> first = Bind(cache, model, ReferenceEngine());
    ASSERT_TRUE(first);
    EXPECT_TRUE(cache.is_bound());
    EXPECT_EQ(BindError(cache, model), "CacheAlreadyBound");
  }
  EXPECT_FALSE(cache.is_bound());
  EXPECT_EQ(BindError(cache, model), "bound");
}

TEST(BindTest, TamperedCachesHitTheDefensiveChecks) {
  const DecoderModel model = FixtureModel();
  struct Case {
    const char* expected;
    void (*tamper)(DecoderKvCache&);
  };
  const Case cases[] = {
      {"ModelParameterCountMismatch { cache: 19, model: 20 }",
       [](DecoderKvCache& c) { KvCacheTestAccess::bindings(c).pop_back(); }},
      {"LayerCountMismatch { cache: 1, model: 2 }",
       [](DecoderKvCache& c) { KvCacheTestAccess::layers(c).pop_back(); }},
      {"LayerLengthInvariant { layer: 1, expected: 0, actual: 1 }",
       [](DecoderKvCache& c) {
         KvCacheTestAccess::layer_len(KvCacheTestAccess::layers(c)[1]) = 1;
       }},
      {"LayerBatchSizeMismatch { layer: 0, expected: 1, actual: 2 }",
       [](DecoderKvCache& c) {
         KvCacheTestAccess::layer_batch(KvCacheTestAccess::layers(c)[0]) = 2;
       }},
      {"LayerCapacityMismatch { layer: 1, expected: 4, actual: 3 }",
       [](DecoderKvCache& c) {
         KvCacheTestAccess::layer_capacity(KvCacheTestAccess::layers(c)[1]) = 3;
       }},
      {"IncrementalAttention { layer: 0, source: CacheModelWidthMismatch { layer: 4, cache: 8 } }",
       [](DecoderKvCache& c) {
         KvCacheTestAccess::layer_model_width(KvCacheTestAccess::layers(c)[0]) = 8;
       }},
      {"IncrementalAttention { layer: 1, source: CacheHeadCountMismatch { layer: 2, cache: 1 } }",
       [](DecoderKvCache& c) {
         KvCacheTestAccess::layer_heads(KvCacheTestAccess::layers(c)[1]) = 1;
       }},
      {"IncrementalAttention { layer: 0, source: CacheHeadWidthMismatch { layer: 2, cache: 4 } }",
       [](DecoderKvCache& c) {
         KvCacheTestAccess::layer_head_width(KvCacheTestAccess::layers(c)[0]) = 4;
       }},
      {"IncrementalAttention { layer: 1, source: CacheLayerMismatch }",
       [](DecoderKvCache& c) {
         std::vector<ParameterBinding>& b =
             KvCacheTestAccess::layer_bindings(KvCacheTestAccess::layers(c)[1]);
         std::swap(b[0], b[1]);
       }},
      {"IncrementalAttention { layer: 0, source: CacheLayerRevisionMismatch { parameter: 2, cache: "
       "7, layer: 0 } }",
       [](DecoderKvCache& c) {
         KvCacheTestAccess::layer_bindings(KvCacheTestAccess::layers(c)[0])[2].revision = 7;
       }},
      {"IncrementalAttention { layer: 0, source: CacheRopeMismatch { cache_feature_width: 2, "
       "layer_feature_width: 2, "
       "cache_max_positions: 6, layer_max_positions: 4, cache_base: 10000.0, layer_base: 10000.0 } "
       "}",
       [](DecoderKvCache& c) {
         KvCacheTestAccess::layer_rope_positions(KvCacheTestAccess::layers(c)[0]) = 6;
       }},
  };
  for (const Case& c : cases) {
    DecoderKvCache cache = NewCache(model);
    c.tamper(cache);
    const DecoderKvCache before = CloneOf(cache);
    EXPECT_EQ(BindError(cache, model), c.expected);
    EXPECT_TRUE(cache == before) << c.expected;
  }
}

class SessionTest : public ::testing::Test {
 protected:
  SessionTest() : model_(FixtureModel()), cache_(NewCache(model_)) {}

  // Runs `call`, expects the error `expected`, and proves the cache unchanged.
  template <class Call>
  void ExpectRejected(DecoderKvSession& session, Call call, const std::string& expected) {
    const DecoderKvCache before = CloneOf(session.cache());
    Result<StepOutput> output = call(session);
    ASSERT_FALSE(output) << expected;
    EXPECT_EQ(output.error().Debug(), expected);
    EXPECT_TRUE(session.cache() == before) << expected;
  }

  DecoderModel model_;
  DecoderKvCache cache_;
};

TEST_F(SessionTest, EveryRequestErrorLeavesTheStateUnchanged) {
  DecoderKvSession session = *Bind(cache_, model_, ReferenceEngine());
  auto decode = [](uint32_t token) {
    return [token](DecoderKvSession& s) { return s.Decode(token); };
  };
  auto prefill = [](std::vector<uint32_t> prompt) {
    return [prompt](DecoderKvSession& s) { return s.Prefill(prompt); };
  };
  ExpectRejected(session, decode(0), "DecodeRequiresPrefill");
  ExpectRejected(session, decode(9), "DecodeRequiresPrefill");  // the phase comes first
  ExpectRejected(session, prefill({}), "EmptyPrompt");
  ExpectRejected(session, prefill({0, 1, 2, 3, 4}), "PromptTooLong { tokens: 5, capacity: 4 }");
  ExpectRejected(session, prefill({0, 1, 5}),
                 "PromptTokenOutOfBounds { position: 2, token_id: 5, vocabulary_size: 5 }");
  ASSERT_TRUE(session.Prefill(std::vector<uint32_t>{0, 1}));
  ExpectRejected(session, prefill({}), "EmptyPrompt");  // empty before non-empty state
  ExpectRejected(session, prefill({0}), "PrefillRequiresEmpty { len: 2 }");
  ExpectRejected(session, decode(5), "DecodeTokenOutOfBounds { token_id: 5, vocabulary_size: 5 }");
  ASSERT_TRUE(session.Decode(2));
  ASSERT_TRUE(session.Decode(3));
  EXPECT_TRUE(session.cache().is_full());
  ExpectRejected(session, decode(4), "Full { capacity: 4 }");
  ExpectRejected(session, decode(5), "DecodeTokenOutOfBounds { token_id: 5, vocabulary_size: 5 }");
}

TEST_F(SessionTest, WorkCountersFollowTheCh38WorkedExample) {
  DecoderKvSession session = *Bind(cache_, model_, ReferenceEngine());
  Result<StepOutput> prefill = session.Prefill(std::vector<uint32_t>{0, 1});
  ASSERT_TRUE(prefill);
  EXPECT_EQ(prefill->attention_score_values, 8u);  // the last prompt row only
  EXPECT_EQ(session.cache().work().attention_score_values, 12u);
  ASSERT_TRUE(session.Decode(2));
  const KvWork& work = session.cache().work();
  EXPECT_EQ(work.token_forwards, 3u);
  EXPECT_EQ(work.prefill_tokens, 2u);
  EXPECT_EQ(work.decode_tokens, 1u);
  EXPECT_EQ(work.cache_appends, 6u);
  EXPECT_EQ(work.qkv_projection_rows, 18u);
  EXPECT_EQ(work.attention_score_values, 24u);
  EXPECT_NE(session.cache().layer(0)->key_address(), session.cache().layer(1)->key_address());
}

TEST_F(SessionTest, CountersThatWouldOverflowFailWithoutCommitting) {
  DecoderKvSession session = *Bind(cache_, model_, ReferenceEngine());
  ASSERT_TRUE(session.Prefill(std::vector<uint32_t>{0}));
  KvCacheTestAccess::work(cache_).attention_score_values = std::numeric_limits<uint64_t>::max() - 1;
  ExpectRejected(
      session, [](DecoderKvSession& s) { return s.Decode(1); },
      "WorkOverflow { counter: AttentionScoreValues }");
  KvCacheTestAccess::work(cache_).attention_score_values = 0;
  KvCacheTestAccess::work(cache_).token_forwards = std::numeric_limits<uint64_t>::max();
  ExpectRejected(
      session, [](DecoderKvSession& s) { return s.Decode(1); },
      "WorkOverflow { counter: TokenForwards }");
}

TEST(TwoPhaseCommitTest, AFailedDecodeCommitsNothingAndCanBeRetried) {
  const DecoderModel model = OverflowModel();
  DecoderKvCache cache = NewCache(model);
  DecoderKvSession session = *Bind(cache, model, ReferenceEngine());
  ASSERT_TRUE(session.Prefill(std::vector<uint32_t>{0}));
  const DecoderKvCache before = CloneOf(session.cache());
  Result<StepOutput> failed = session.Decode(3);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code(), ErrorCode::kIncrementalAttention);
  EXPECT_TRUE(failed.error().Has(ErrorCode::kPositiveInfinityLogit)) << failed.error().Debug();
  EXPECT_TRUE(session.cache() == before);  // not one stored double changed
  // The same session goes on with a good token (0 is the one token that stays
  // finite in this model), as if nothing had happened.
  Result<StepOutput> retried = session.Decode(0);
  ASSERT_TRUE(retried);
  EXPECT_EQ(session.cache().len(), 2u);
  for (size_t l = 0; l < session.cache().layer_count(); ++l)
    EXPECT_EQ(session.cache().layer_len(l), 2u);
}

TEST(TwoPhaseCommitTest, AFailedPrefillLeavesTheEmptyState) {
  const DecoderModel model = OverflowModel();
  DecoderKvCache cache = NewCache(model);
  DecoderKvSession session = *Bind(cache, model, ReferenceEngine());
  // Failing in the first row: nothing was written at all.
  DecoderKvCache before = CloneOf(session.cache());
  ASSERT_FALSE(session.Prefill(std::vector<uint32_t>{3}));
  EXPECT_TRUE(session.cache() == before);
  // Failing in the second row: the first row's K/V stay as stale data, but the
  // cache is logically empty, counters zero, and it prefills again.
  Result<StepOutput> failed = session.Prefill(std::vector<uint32_t>{0, 3});
  ASSERT_FALSE(failed);
  const DecoderKvCache& state = session.cache();
  EXPECT_EQ(state.len(), 0u);
  EXPECT_FALSE(state.prefill_complete());
  EXPECT_EQ(state.work(), KvWork{});
  for (size_t l = 0; l < state.layer_count(); ++l) EXPECT_EQ(state.layer_len(l), 0u);
  EXPECT_FALSE(state == before);  // stale rows differ (spec/kv-cache.md §3.5)
  ASSERT_TRUE(session.Prefill(std::vector<uint32_t>{0, 0}));
  EXPECT_EQ(session.cache().len(), 2u);
}

TEST_F(SessionTest, ResetKeepsAllocationsAndStaleRowsAndReplaysIdentically) {
  DecoderKvSession session = *Bind(cache_, model_, ReferenceEngine());
  ASSERT_TRUE(session.Prefill(std::vector<uint32_t>{0, 1}));
  Result<StepOutput> first = session.Decode(2);
  ASSERT_TRUE(first);
  const std::vector<double> first_logits(first->logits.begin(), first->logits.end());
  const void* key_address = session.cache().layer(0)->key_address();
  const std::vector<double> stored = session.cache().layer(1)->ValueStorage();
  session.Reset();
  EXPECT_EQ(session.cache().len(), 0u);
  EXPECT_EQ(session.cache().work(), KvWork{});
  EXPECT_FALSE(session.cache().prefill_complete());
  EXPECT_EQ(session.cache().layer(0)->key_address(), key_address);
  EXPECT_EQ(session.cache().layer(1)->ValueStorage(), stored);
  const DecoderKvCache fresh = NewCache(model_);
  EXPECT_FALSE(session.cache() == fresh);  // stale rows count
  ASSERT_TRUE(session.Prefill(std::vector<uint32_t>{0, 1}));
  Result<StepOutput> replay = session.Decode(2);
  ASSERT_TRUE(replay);
  EXPECT_EQ(std::vector<double>(replay->logits.begin(), replay->logits.end()), first_logits);
}

TEST_F(SessionTest, ANewSessionContinuesWhereTheLastOneStopped) {
  std::vector<double> continuous;
  {
    DecoderKvCache other = NewCache(model_);
    DecoderKvSession session = *Bind(other, model_, ReferenceEngine());
    ASSERT_TRUE(session.Prefill(std::vector<uint32_t>{0, 1}));
    Result<StepOutput> decoded = session.Decode(2);
    continuous.assign(decoded->logits.begin(), decoded->logits.end());
  }
  { ASSERT_TRUE(Bind(cache_, model_, ReferenceEngine())->Prefill(std::vector<uint32_t>{0, 1})); }
  DecoderKvSession resumed = *Bind(cache_, model_, ReferenceEngine());
  Result<StepOutput> decoded = resumed.Decode(2);
  ASSERT_TRUE(decoded);
  EXPECT_EQ(std::vector<double>(decoded->logits.begin(), decoded->logits.end()), continuous);
}

TEST_F(SessionTest, ParameterUpdatesAreRefusedWhileASessionLives) {
  std::vector<ParameterUpdate> step;
  for (size_t i = 0; i < model_.parameters().size(); ++i) {
    std::vector<double> values(model_.parameter(i).values().begin(),
                               model_.parameter(i).values().end());
    for (double& v : values) v *= 0.5;
    step.push_back({i, std::move(values)});
  }
  const std::vector<double> embedding_before(model_.embedding().values().begin(),
                                             model_.embedding().values().end());
  {
    DecoderKvSession session = *Bind(cache_, model_, ReferenceEngine());
    ASSERT_TRUE(session.Prefill(std::vector<uint32_t>{0, 1}));
    session.Reset();
    for (int attempt = 0; attempt < 3; ++attempt) {
      Result<void> refused = model_.UpdateParameters(step);
      ASSERT_FALSE(refused);
      EXPECT_EQ(refused.error().Debug(),
                "ParameterValueBorrowed { name: \"token_embedding.weight\" }");
    }
    for (const ParameterPtr& p : model_.parameters()) EXPECT_EQ(p->revision(), 0u);
    EXPECT_TRUE(std::equal(embedding_before.begin(), embedding_before.end(),
                           model_.embedding().values().begin()));
    EXPECT_TRUE(session.Decode(2).error().Has(ErrorCode::kDecodeRequiresPrefill));
  }
  ASSERT_TRUE(model_.UpdateParameters(step));
  for (const ParameterPtr& p : model_.parameters()) EXPECT_EQ(p->revision(), 1u);
  EXPECT_EQ(model_.embedding().values()[0], embedding_before[0] * 0.5);
  // The old cache (prefilled, reset) can never bind again; a new one can.
  EXPECT_EQ(BindError(cache_, model_),
            "ModelParameterRevisionMismatch { index: 0, cache: 0, model: 1 }");
  DecoderKvCache fresh = NewCache(model_);
  EXPECT_EQ(BindError(fresh, model_), "bound");
}

TEST_F(SessionTest, DecodeAllocatesNothingAfterBind) {
  DecoderKvSession session = *Bind(cache_, model_, ReferenceEngine());
  ASSERT_TRUE(session.Prefill(std::vector<uint32_t>{0}));
  const uint64_t before = testing::HeapAllocationsOnThisThread();
  for (uint32_t token : {1u, 2u, 3u}) ASSERT_TRUE(session.Decode(token));
  session.Reset();
  EXPECT_EQ(testing::HeapAllocationsOnThisThread(), before);
}

// An engine that moves a layer's length during Prepare: the commit check must
// catch it (the fault is the engine's; the session refuses to commit on top of it).
class LengthMovingEngine final : public detail::Engine {
 public:
  explicit LengthMovingEngine(std::unique_ptr<detail::Engine> inner) : inner_(std::move(inner)) {}
  size_t max_rows_per_step() const override { return 1; }
  size_t max_rows_per_run() const override { return 1; }
  Result<void> Prepare(const detail::EngineStep& step, std::span<LayerKvCache> layers,
                       std::span<double> logits) override {
    Result<void> prepared = inner_->Prepare(step, layers, logits);
    KvCacheTestAccess::layer_len(layers[1]) += 1;
    return prepared;
  }
  void Commit(const detail::EngineStep& step, std::span<LayerKvCache> layers) override {
    inner_->Commit(step, layers);
  }

 private:
  std::unique_ptr<detail::Engine> inner_;
};

TEST_F(SessionTest, ACacheChangedDuringPrepareIsNotCommitted) {
  auto engine =
      std::make_unique<LengthMovingEngine>(*detail::CreateReferenceEngine(model_, cache_));
  DecoderKvSession session = KvCacheTestAccess::BindWithEngine(cache_, model_, std::move(engine));
  Result<StepOutput> output = session.Prefill(std::vector<uint32_t>{0});
  ASSERT_FALSE(output);
  EXPECT_EQ(output.error().Debug(), "PreparedCacheChanged { layer: 1 }");
  EXPECT_EQ(session.cache().len(), 0u);
  EXPECT_EQ(session.cache().work(), KvWork{});
}

}  // namespace
}  // namespace kvrt
