// The state the session fuzzer drives: three models over two sets of parameter
// nodes, three cache slots and two session slots, plus a shadow of what every
// cache must look like (spec/kv-cache.md §3–§5), checked after each operation.
//
// Models: 0 is seeded; 1 is rebuilt from 0's values (new nodes, same config);
// 2 shares 0's nodes with another rms_epsilon (another config). So binding a
// cache of one model to another exercises ModelConfigMismatch and
// ModelParameterMismatch, and updates through 0 make caches of 0 and 2 stale.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "fuzz_input.h"
#include "kv/decoder_kv_cache.h"
#include "model/decoder_model.h"
#include "session/decoder_kv_session.h"

namespace kvrt::fuzz {

inline constexpr size_t kModels = 3;
inline constexpr size_t kCacheSlots = 3;
inline constexpr size_t kSessionSlots = 2;

// Which node set a model uses: 0 for models 0 and 2, 1 for model 1.
inline size_t NodeSetOf(size_t model) { return model == 1 ? 1 : 0; }

struct CacheShadow {
  size_t model = 0;                // the model the cache was built from
  std::vector<uint64_t> captured;  // that model's revisions at creation
  size_t len = 0;
  size_t prompt_rows = 0;  // rows per sequence of the committed prefill
  bool complete = false;
  std::optional<size_t> session;  // the session slot bound to this cache
};

struct SessionSlot {
  std::optional<DecoderKvSession> session;
  size_t cache = 0;
  size_t model = 0;
};

class SessionWorld {
 public:
  // Builds the three models from the first input bytes (configuration and seed).
  explicit SessionWorld(FuzzInput& input);
  ~SessionWorld();
  SessionWorld(const SessionWorld&) = delete;
  SessionWorld& operator=(const SessionWorld&) = delete;

  // One operation read from `input`, then every invariant.
  void Step(FuzzInput& input);

 private:
  void NewCache(FuzzInput& input);
  void CloneCache(FuzzInput& input);
  void Bind(FuzzInput& input);
  void Prefill(FuzzInput& input);
  void Decode(FuzzInput& input);
  void Reset(FuzzInput& input);
  void Drop(FuzzInput& input);
  void Update(FuzzInput& input);

  void DropSession(size_t slot);
  // Drops the session bound to `cache`, if any (a cache must outlive its session).
  void ReleaseCache(size_t cache);
  // The error Bind must return for these arguments, or nullopt for success.
  std::optional<ErrorCode> PredictBind(size_t cache, size_t model, const EngineOptions& engine) const;
  bool NodeSetBorrowed(size_t node_set) const;

  // Invariants of every cache, borrow and revision, and that every cache the
  // operation did not target equals its copy from before the operation.
  void CheckAll(std::optional<size_t> target) const;
  void CheckCache(size_t slot) const;
  void SnapshotCaches();

  const ModelConfig& config() const { return models_[0].config(); }

  std::vector<DecoderModel> models_;
  std::array<std::vector<uint64_t>, 2> revisions_;  // shadow, per node set
  // Set once an update wrote values that can overflow the forward pass; before
  // that a numeric failure of a step is a bug.
  bool extreme_values_ = false;
  std::array<std::optional<DecoderKvCache>, kCacheSlots> caches_;
  std::array<CacheShadow, kCacheSlots> shadows_;
  std::array<std::optional<DecoderKvCache>, kCacheSlots> before_;  // copies before the operation
  std::array<SessionSlot, kSessionSlots> sessions_;
  // The cache the current operation may change (all others must not change).
  std::optional<size_t> target_;
};

}  // namespace kvrt::fuzz
