// Steps over a KV cache's sequence slots: what a step asks for (SlotRun), what
// it returns (StepOutput, SlotStepOutput), what a cache counts (KvWork) and how
// a cache is sized (CacheOptions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kvrt/engine_options.h"

namespace kvrt {

// Work counters of a cache (spec/kv-cache.md §4), advanced only when a token step
// commits and zeroed by reset. Every slot has its own; the cache's total is their
// sum (for a batch of B sequences every per-token counter counts B tokens per
// step; B = 1 gives the reference's numbers).
struct KvWork {
  uint64_t token_forwards = 0;
  uint64_t prefill_tokens = 0;
  uint64_t decode_tokens = 0;
  uint64_t cache_appends = 0;           // rows appended, one per layer per token
  uint64_t qkv_projection_rows = 0;     // 3 per layer per token
  uint64_t attention_score_values = 0;  // Σ over layers of B·H·(position + 1)
  bool operator==(const KvWork&) const = default;
};

struct CacheOptions {
  size_t batch_size = 1;  // sequence slots
  size_t capacity = 0;    // 0: the model's max_positions (the reference's choice)
  // Element type of the stored rows; it must match the engine the cache binds to
  // (f32 for the default fast engine, f64 for ReferenceEngine()).
  Precision precision = Precision::kF32;
  // Element type of the rows (kvrt/engine_options.h); it must match the engine's
  // EngineOptions::kv_type. kF16 and kBf16 on an f32 cache store 2 bytes an element;
  // on an f64 cache (the reference engine) 8, holding values rounded to the type.
  KvType kv_type = KvType::kEngine;
};

// What one committed prefill or decode returns. `logits` ([batch, V], f64) points
// into the session's workspace and stays valid until the next call on the session.
struct StepOutput {
  std::span<const double> logits;
  size_t position = 0;                  // position of the last row forwarded
  size_t cache_len = 0;                 // len after the commit
  uint64_t attention_score_values = 0;  // score values of the last row only
};

// One slot's part of a step over slots.
enum class RunPhase {
  kPrefill,  // a chunk of the slot's prompt (counted as prefill tokens)
  kDecode,   // one token after a complete prompt (counted as a decode token)
};
struct SlotRun {
  size_t slot = 0;
  std::span<const uint32_t> tokens;
  RunPhase phase = RunPhase::kPrefill;
  bool completes_prompt = true;  // prefill: this chunk ends the prompt (then decodes may follow)
};

// What a committed step returns: the last row's logits of every run, [runs, V]
// in run order (f64), valid until the next call on the session.
struct SlotStepOutput {
  std::span<const double> logits;
  size_t runs = 0;
};

}  // namespace kvrt
