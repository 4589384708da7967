#include "session_world.h"

#include <string>

#include "cache_state.h"
#include "fuzz_check.h"
#include "kvrt/rng.h"

namespace kvrt::fuzz {
namespace {

// Small geometries that still cover every shape rule: two layers, grouped-query
// attention with an untied head, a single head, and no layers at all.
ModelConfig ConfigVariant(size_t variant) {
  switch (variant) {
    case 0:
      return ModelConfig::Create(7, 4, 2, 6, 2, 6, 10000.0, 1e-6);
    case 1: {
      ModelConfig config = ModelConfig::Create(5, 8, 4, 4, 1, 5, 500.0, 1e-5);
      config.kv_heads = 2;
      config.tied_output = false;
      return config;
    }
    case 2:
      return ModelConfig::Create(9, 4, 1, 3, 3, 4, 10000.0, 1e-6);
    default:
      return ModelConfig::Create(6, 4, 2, 4, 0, 5, 10000.0, 1e-6);
  }
}

}  // namespace

SessionWorld::SessionWorld(FuzzInput& input) {
  const ModelConfig config = ConfigVariant(input.Below(4));
  SplitMix64 rng(38 + input.Byte());
  Result<DecoderModel> seeded = DecoderModel::FromSeed(config, rng);
  KVRT_FUZZ_CHECK(seeded, Describe(seeded));
  models_.push_back(std::move(*seeded));
  Result<DecoderModel> rebuilt = models_[0].RebuildFromValues();
  KVRT_FUZZ_CHECK(rebuilt, Describe(rebuilt));
  models_.push_back(std::move(*rebuilt));
  ModelConfig other_epsilon = config;
  other_epsilon.rms_epsilon = 2 * config.rms_epsilon;
  Result<DecoderModel> same_nodes = DecoderModel::FromParameters(other_epsilon, models_[0].parameters());
  KVRT_FUZZ_CHECK(same_nodes, Describe(same_nodes));
  models_.push_back(std::move(*same_nodes));
  for (std::vector<uint64_t>& revisions : revisions_) {
    revisions.assign(models_[0].parameters().size(), 0);
  }
}

SessionWorld::~SessionWorld() {
  // Sessions point at caches: end them first.
  for (size_t slot = 0; slot < kSessionSlots; ++slot) DropSession(slot);
}

void SessionWorld::Step(FuzzInput& input) {
  SnapshotCaches();
  switch (input.Below(9)) {
    case 0: NewCache(input); break;
    case 1: CloneCache(input); break;
    case 2: Bind(input); break;
    case 3: Prefill(input); break;
    case 4: Decode(input); break;
    case 5: Decode(input); break;  // decode is the common step; weight it up
    case 6: Reset(input); break;
    case 7: Drop(input); break;
    default: Update(input); break;
  }
  CheckAll(target_);
  target_.reset();
}

void SessionWorld::SnapshotCaches() {
  for (size_t slot = 0; slot < kCacheSlots; ++slot) {
    before_[slot].reset();
    if (!caches_[slot]) continue;
    Result<DecoderKvCache> copy = caches_[slot]->Clone();
    KVRT_FUZZ_CHECK(copy, Describe(copy));
    KVRT_FUZZ_CHECK(!copy->is_bound() && SameState(*copy, *caches_[slot]), "clone differs");
    before_[slot].emplace(std::move(*copy));
  }
}

void SessionWorld::DropSession(size_t slot) {
  SessionSlot& session = sessions_[slot];
  if (!session.session) return;
  shadows_[session.cache].session.reset();
  session.session.reset();
}

void SessionWorld::ReleaseCache(size_t cache) {
  if (shadows_[cache].session) DropSession(*shadows_[cache].session);
}

bool SessionWorld::NodeSetBorrowed(size_t node_set) const {
  for (const SessionSlot& session : sessions_) {
    if (session.session && NodeSetOf(session.model) == node_set) return true;
  }
  return false;
}

void SessionWorld::CheckAll(std::optional<size_t> target) const {
  for (size_t slot = 0; slot < kCacheSlots; ++slot) {
    if (!caches_[slot]) continue;
    CheckCache(slot);
    if (slot != target && before_[slot]) {
      KVRT_FUZZ_CHECK(SameState(*caches_[slot], *before_[slot]),
                      "cache " + std::to_string(slot) + " changed by an operation on another");
    }
  }
  for (size_t set = 0; set < 2; ++set) {
    int64_t readers = 0;
    for (const SessionSlot& session : sessions_) {
      if (session.session && NodeSetOf(session.model) == set) ++readers;
    }
    const DecoderModel& model = models_[set == 0 ? 0 : 1];
    for (size_t i = 0; i < model.parameters().size(); ++i) {
      KVRT_FUZZ_CHECK(model.parameter(i).revision() == revisions_[set][i],
                      "revision of parameter " + std::to_string(i));
      KVRT_FUZZ_CHECK(model.parameter(i).shared_borrows() == readers,
                      "borrows of parameter " + std::to_string(i));
    }
  }
  for (size_t slot = 0; slot < kSessionSlots; ++slot) {
    const SessionSlot& session = sessions_[slot];
    if (!session.session) continue;
    KVRT_FUZZ_CHECK(&session.session->cache() == &*caches_[session.cache], "session cache");
    KVRT_FUZZ_CHECK(shadows_[session.cache].session == slot, "session slot");
  }
}

// spec/kv-cache.md §3.2 and §4: all layers at len, prefill_complete iff len > 0,
// and the six counters exactly as the positions 0..len-1 of one prompt and its
// decodes produce them (B sequences count B tokens per step).
void SessionWorld::CheckCache(size_t slot) const {
  const DecoderKvCache& cache = *caches_[slot];
  const CacheShadow& shadow = shadows_[slot];
  const ModelConfig& model_config = cache.config();
  const uint64_t layers = model_config.layers, heads = model_config.heads;
  const uint64_t batch = cache.batch_size(), len = cache.len();
  const std::string where = "cache " + std::to_string(slot) + ": ";
  KVRT_FUZZ_CHECK(cache.layer_count() == layers, where + "layer count");
  for (size_t l = 0; l < cache.layer_count(); ++l) {
    KVRT_FUZZ_CHECK(cache.layer_len(l) == len, where + "layer length differs from len");
  }
  KVRT_FUZZ_CHECK(len == shadow.len && cache.prefill_complete() == shadow.complete,
                  where + "len " + std::to_string(len) + ", expected " + std::to_string(shadow.len));
  KVRT_FUZZ_CHECK(cache.prefill_complete() == (len > 0), where + "prefill_complete");
  KVRT_FUZZ_CHECK(len <= cache.capacity(), where + "len past capacity");
  KvWork expected;
  expected.token_forwards = batch * len;
  expected.prefill_tokens = batch * shadow.prompt_rows;
  expected.decode_tokens = batch * (len - shadow.prompt_rows);
  expected.cache_appends = layers * batch * len;
  expected.qkv_projection_rows = 3 * layers * batch * len;
  expected.attention_score_values = layers * batch * heads * (len * (len + 1) / 2);
  KVRT_FUZZ_CHECK(cache.work() == expected, where + "work counters differ from spec §4");
  KVRT_FUZZ_CHECK(cache.is_bound() == shadow.session.has_value(), where + "bound flag");
  const std::vector<ParameterBinding>& bindings = cache.bindings();
  const std::vector<ParameterPtr>& nodes = models_[shadow.model].parameters();
  KVRT_FUZZ_CHECK(bindings.size() == nodes.size(), where + "binding count");
  for (size_t i = 0; i < bindings.size(); ++i) {
    KVRT_FUZZ_CHECK(bindings[i].node == nodes[i] && bindings[i].revision == shadow.captured[i],
                    where + "binding " + std::to_string(i));
  }
}

}  // namespace kvrt::fuzz
