// The ch38-cached-generation demo report (spec/kv-cache.md §6), every figure
// computed by the runtime: cached vs complete-prefix logits of the seed-38
// fixture, work counters, the restored ch35 checkpoint's generation runs, reset
// evidence and rejected-call evidence. The demo's invariants are checked; a
// failed one is an InvariantViolation error instead of a report.
#include "kvrt/course.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "formats/llmcp35/checkpoint.h"
#include "kvrt/generation.h"
#include "kv/decoder_kv_cache.h"
#include "engine/reference/complete_prefix.h"
#include "session/decoder_kv_session.h"
#include "generate/generate.h"

namespace kvrt {
namespace {

constexpr double kTolerance = 2e-12;

std::string Decimals(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  std::string text = buffer;
  if (text[0] == '-' && text.find_first_not_of("-0.") == std::string::npos) text.erase(0, 1);  // -0.0
  return text;
}

std::string List(const std::vector<double>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? "," : "") + Decimals(values[i], 9);
  return text + "]";
}

template <class T>
std::string IntList(const std::vector<T>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? "," : "") + std::to_string(values[i]);
  return text + "]";
}

std::string Flag(bool value) { return value ? "true" : "false"; }

std::string Hex(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

Error Invariant(const std::string& what) {
  return Error(ErrorCode::kInvariantViolation, {{"", what}}, "ch38 report invariant failed: " + what);
}

// A complete-prefix forward: its last-row logits and the element count of every
// block's attention weights (the score values it computed).
struct CompletePrefix {
  std::vector<double> last_row;
  uint64_t score_values = 0;
};

Result<CompletePrefix> RunCompletePrefix(const DecoderModel& model, const std::vector<uint32_t>& tokens) {
  ForwardTrace trace;
  const size_t shape[2] = {1, tokens.size()};
  Result<std::vector<double>> logits = ForwardCompletePrefix(model, tokens, shape, &trace);
  if (!logits) return std::unexpected(logits.error());
  CompletePrefix out;
  const size_t v = model.config().vocabulary_size;
  out.last_row.assign(logits->end() - static_cast<std::ptrdiff_t>(v), logits->end());
  for (const ForwardTrace::Stage& stage : trace.stages) {
    if (stage.name.ends_with(".attention.weights")) out.score_values += stage.values.size();
  }
  return out;
}

double MaxAbsDiff(std::span<const double> a, std::span<const double> b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

std::string LayerLengths(const DecoderKvCache& cache) {
  std::vector<size_t> lengths;
  for (size_t l = 0; l < cache.layer_count(); ++l) lengths.push_back(cache.layer_len(l));
  return IntList(lengths);
}

std::string Shape(const DecoderKvCache& cache) {
  const LayerKvCache& layer = *cache.layer(0);
  return IntList(std::vector<size_t>{layer.batch_size(), layer.heads(), layer.len(), layer.head_width()});
}

// The chapter's `tokens_match`: prompts, ids, stop, step count and every step.
bool TokensMatch(const GenerationResult& a, const GenerationResult& b) {
  return a.prompt == b.prompt && a.generated == b.generated && a.stop == b.stop && a.steps == b.steps;
}

struct LoadedRun {
  GenerationResult cached;
  GenerationResult uncached;
  bool rng_match = false;
};

Result<LoadedRun> RunBothLoops(const DecoderModel& model, uint64_t rng_state, const GenerationConfig& config) {
  const std::vector<uint32_t> prompt = {0};
  SplitMix64 cached_rng(rng_state), uncached_rng(rng_state);
  Result<GenerationResult> cached = GenerateCached(model, prompt, config, cached_rng, ReferenceEngine());
  if (!cached) return std::unexpected(cached.error());
  Result<GenerationResult> uncached = GenerateUncached(model, prompt, config, uncached_rng, ReferenceEngine());
  if (!uncached) return std::unexpected(uncached.error());
  return LoadedRun{std::move(*cached), std::move(*uncached), cached_rng.state() == uncached_rng.state()};
}

// Runs `call` on `session` and reports whether it failed with exactly `expected`
// while leaving the cache equal to its state before the call.
template <class Call>
Result<bool> RejectedUnchanged(DecoderKvSession& session, Call call, const std::string& expected) {
  Result<DecoderKvCache> before = session.cache().Clone();
  if (!before) return std::unexpected(before.error());
  Result<StepOutput> output = call(session);
  return !output && output.error().Debug() == expected && session.cache() == *before;
}

}  // namespace

Result<std::string> Ch38Report(std::span<const uint8_t> ch35_checkpoint) {
  const ModelConfig config = ModelConfig::Create(5, 4, 2, 4, 2, 4, 10000.0, 1e-6);
  SplitMix64 seed(38);
  Result<DecoderModel> built = DecoderModel::FromSeed(config, seed);
  if (!built) return std::unexpected(built.error());
  const DecoderModel& model = *built;
  const std::vector<uint32_t> prompt = {0, 1};
  const uint32_t decode_token = 2;
  std::string report = "chapter=38-cached-generation\n";
  report += "config=layers:" + std::to_string(config.layers) + " heads:" + std::to_string(config.heads) +
            " model_width:" + std::to_string(config.model_width) +
            " context:" + std::to_string(config.max_positions) + " tolerance:" + Decimals(kTolerance, 12) + "\n";

  Result<DecoderKvCache> cache = DecoderKvCache::Create(model, CacheOptions{.precision = Precision::kF64});
  if (!cache) return std::unexpected(cache.error());
  Result<DecoderKvSession> session = Bind(*cache, model, ReferenceEngine());
  if (!session) return std::unexpected(session.error());

  // prefill=
  Result<StepOutput> prefill = session->Prefill(prompt);
  if (!prefill) return std::unexpected(prefill.error());
  const std::vector<double> prefill_logits(prefill->logits.begin(), prefill->logits.end());
  const uint64_t prefill_scores = cache->work().attention_score_values;
  Result<CompletePrefix> full_prefill = RunCompletePrefix(model, prompt);
  if (!full_prefill) return std::unexpected(full_prefill.error());
  const double prefill_diff = MaxAbsDiff(prefill_logits, full_prefill->last_row);
  report += "prefill=prompt:" + IntList(prompt) + " cache:0->" + std::to_string(prefill->cache_len) +
            " layer_lengths:" + LayerLengths(*cache) + " shape:" + Shape(*cache) +
            " cached_scores:" + std::to_string(prefill_scores) +
            " complete_prefix_scores:" + std::to_string(full_prefill->score_values) +
            " max_abs_diff:" + Decimals(prefill_diff, 12) + " logits:" + List(prefill_logits) + "\n";

  // decode=
  Result<StepOutput> decode = session->Decode(decode_token);
  if (!decode) return std::unexpected(decode.error());
  const std::vector<double> decode_logits(decode->logits.begin(), decode->logits.end());
  const uint64_t decode_scores = cache->work().attention_score_values - prefill_scores;
  std::vector<uint32_t> decoded_prefix = prompt;
  decoded_prefix.push_back(decode_token);
  Result<CompletePrefix> full_decode = RunCompletePrefix(model, decoded_prefix);
  if (!full_decode) return std::unexpected(full_decode.error());
  const double decode_diff = MaxAbsDiff(decode_logits, full_decode->last_row);
  report += "decode=token:" + std::to_string(decode_token) + " position:" + std::to_string(decode->position) +
            " cache:" + std::to_string(prompt.size()) + "->" + std::to_string(decode->cache_len) +
            " layer_lengths:" + LayerLengths(*cache) + " shape:" + Shape(*cache) +
            " cached_scores:" + std::to_string(decode_scores) +
            " complete_prefix_scores:" + std::to_string(full_decode->score_values) +
            " max_abs_diff:" + Decimals(decode_diff, 12) + " logits:" + List(decode_logits) + "\n";
  if (prefill_diff > kTolerance || decode_diff > kTolerance) {
    return std::unexpected(Invariant("cached logits differ from the complete prefix beyond the tolerance"));
  }

  // work=
  const KvWork work = cache->work();
  const uint64_t complete_scores = full_prefill->score_values + full_decode->score_values;
  const bool distinct = cache->layer(0)->key_address() != cache->layer(1)->key_address() &&
                        cache->layer(0)->value_address() != cache->layer(1)->value_address();
  report += "work=prefill_tokens:" + std::to_string(work.prefill_tokens) +
            " decode_tokens:" + std::to_string(work.decode_tokens) +
            " layer_caches:" + std::to_string(config.layers) +
            " cache_appends:" + std::to_string(work.cache_appends) +
            " qkv_rows:" + std::to_string(work.qkv_projection_rows) +
            " cached_scores:" + std::to_string(work.attention_score_values) +
            " complete_prefix_scores:" + std::to_string(complete_scores) +
            " layer_storage_distinct:" + Flag(distinct) + "\n";
  if (!distinct || work.prefill_tokens != 2 || work.decode_tokens != 1 || work.cache_appends != 6 ||
      work.qkv_projection_rows != 18 || work.attention_score_values != 24 || complete_scores != 52) {
    return std::unexpected(Invariant("work counters differ from (2, 1, 6, 18, 24, 52) or storage is shared"));
  }

  // loaded= and eos=: the restored ch35 checkpoint.
  Result<Checkpoint> checkpoint = ParseCheckpoint(ch35_checkpoint);
  if (!checkpoint) return std::unexpected(checkpoint.error());
  Result<DecoderModel> loaded_model = checkpoint->BuildModel();
  if (!loaded_model) return std::unexpected(loaded_model.error());
  const uint64_t rng_state = checkpoint->sampling_rng_state;
  GenerationConfig loaded_config;
  loaded_config.mode = SamplingMode::TemperatureTopK(1.0, 3);
  loaded_config.max_new_tokens = 4;
  Result<LoadedRun> loaded = RunBothLoops(*loaded_model, rng_state, loaded_config);
  if (!loaded) return std::unexpected(loaded.error());
  const GenerationResult& run = loaded->cached;
  Result<std::string> text = checkpoint->tokenizer.DecodeContentUtf8(run.generated);
  if (!text) return std::unexpected(text.error());
  std::vector<size_t> prefixes;
  for (const GenerationStep& step : run.steps) prefixes.push_back(step.prefix_length);
  const size_t context = loaded_model->config().max_positions;
  report += "loaded=checkpoint_bytes:" + std::to_string(ch35_checkpoint.size()) +
            " context_capacity:" + std::to_string(context) + " rng_state:" + Hex(rng_state) +
            " prompt:" + IntList(run.prompt) + " generated:" + IntList(run.generated) + " text:" + *text +
            " prefixes:" + IntList(prefixes) + " stop:" + std::string(GenerationStopName(run.stop)) +
            " final_cache:" + std::to_string(run.final_cache_len) +
            " prefill_tokens:" + std::to_string(run.work.prefill_tokens) +
            " decode_tokens:" + std::to_string(run.work.decode_tokens) +
            " cached_scores:" + std::to_string(run.work.cached_attention_score_values) +
            " complete_prefix_scores:" + std::to_string(run.work.complete_prefix_attention_score_values) +
            " tokens_match:" + Flag(TokensMatch(run, loaded->uncached)) +
            " rng_match:" + Flag(loaded->rng_match) + "\n";
  if (run.stop != GenerationStop::kContextLimit || run.final_cache_len != context ||
      run.work.prefill_tokens != run.prompt.size() || run.work.decode_tokens != 1 ||
      run.generated.size() != 2 || run.work.cached_attention_score_values != 6 ||
      run.work.complete_prefix_attention_score_values != 10) {
    return std::unexpected(Invariant("the loaded checkpoint run differs from the chapter's"));
  }

  GenerationConfig eos_config = loaded_config;
  eos_config.eos_token = run.generated.front();
  Result<LoadedRun> eos = RunBothLoops(*loaded_model, rng_state, eos_config);
  if (!eos) return std::unexpected(eos.error());
  report += "eos=token:" + std::to_string(*eos_config.eos_token) + " generated:" + IntList(eos->cached.generated) +
            " stop:" + std::string(GenerationStopName(eos->cached.stop)) +
            " final_cache:" + std::to_string(eos->cached.final_cache_len) +
            " decode_tokens:" + std::to_string(eos->cached.work.decode_tokens) +
            " tokens_match:" + Flag(TokensMatch(eos->cached, eos->uncached)) +
            " rng_match:" + Flag(eos->rng_match) + "\n";

  // reset=: on the original session, after the decode.
  const size_t before_reset = cache->len();
  std::vector<const void*> addresses;
  std::vector<std::vector<double>> storage;
  for (size_t l = 0; l < cache->layer_count(); ++l) {
    addresses.push_back(cache->layer(l)->key_address());
    addresses.push_back(cache->layer(l)->value_address());
    storage.push_back(cache->layer(l)->KeyStorage());
    storage.push_back(cache->layer(l)->ValueStorage());
  }
  session->Reset();
  bool reused = true, unchanged_storage = true;
  for (size_t l = 0; l < cache->layer_count(); ++l) {
    reused = reused && addresses[2 * l] == cache->layer(l)->key_address() &&
             addresses[2 * l + 1] == cache->layer(l)->value_address();
    unchanged_storage = unchanged_storage && storage[2 * l] == cache->layer(l)->KeyStorage() &&
                        storage[2 * l + 1] == cache->layer(l)->ValueStorage();
  }
  const bool zeroed = cache->work() == KvWork{};
  const size_t after_reset = cache->len();
  Result<StepOutput> replay_prefill = session->Prefill(prompt);
  if (!replay_prefill) return std::unexpected(replay_prefill.error());
  Result<StepOutput> replay = session->Decode(decode_token);
  if (!replay) return std::unexpected(replay.error());
  const bool replay_identical = std::equal(decode_logits.begin(), decode_logits.end(), replay->logits.begin());
  report += "reset=before:" + std::to_string(before_reset) + " after:" + std::to_string(after_reset) +
            " allocation_reused:" + Flag(reused) + " storage_unchanged:" + Flag(unchanged_storage) +
            " work_zeroed:" + Flag(zeroed) + " replay_identical:" + Flag(replay_identical) + "\n";
  if (after_reset != 0 || !reused || !unchanged_storage || !zeroed || !replay_identical) {
    return std::unexpected(Invariant("reset evidence failed"));
  }

  // errors=: a fresh cache for the same model while the first session lives.
  Result<DecoderKvCache> fresh = DecoderKvCache::Create(model, CacheOptions{.precision = Precision::kF64});
  if (!fresh) return std::unexpected(fresh.error());
  Result<DecoderKvCache> fresh_clone = fresh->Clone();
  if (!fresh_clone) return std::unexpected(fresh_clone.error());
  Result<DecoderModel> rebuilt = model.RebuildFromValues();
  if (!rebuilt) return std::unexpected(rebuilt.error());
  Result<DecoderKvSession> rebuilt_bind = Bind(*fresh, *rebuilt, ReferenceEngine());
  const bool rebuilt_model = !rebuilt_bind && rebuilt_bind.error().Debug() == "ModelParameterMismatch { index: 0 }" &&
                             *fresh == *fresh_clone;
  ModelConfig changed = config;
  changed.rms_epsilon = 2e-6;
  Result<DecoderModel> changed_model = DecoderModel::FromParameters(changed, model.parameters());
  if (!changed_model) return std::unexpected(changed_model.error());
  Result<DecoderKvSession> changed_bind = Bind(*fresh, *changed_model, ReferenceEngine());
  const bool changed_config = !changed_bind && changed_bind.error().Debug() == "ModelConfigMismatch" &&
                              *fresh == *fresh_clone;
  Result<DecoderKvSession> checked = Bind(*fresh, model, ReferenceEngine());
  if (!checked) return std::unexpected(checked.error());
  Result<bool> decode_before_prefill = RejectedUnchanged(
      *checked, [](DecoderKvSession& s) { return s.Decode(0); }, "DecodeRequiresPrefill");
  if (!decode_before_prefill) return std::unexpected(decode_before_prefill.error());
  if (Result<StepOutput> ok = checked->Prefill(prompt); !ok) return std::unexpected(ok.error());
  Result<bool> prefill_nonempty = RejectedUnchanged(
      *checked, [](DecoderKvSession& s) { return s.Prefill(std::vector<uint32_t>{0}); },
      "PrefillRequiresEmpty { len: 2 }");
  if (!prefill_nonempty) return std::unexpected(prefill_nonempty.error());
  for (uint32_t token : {2u, 3u}) {
    if (Result<StepOutput> ok = checked->Decode(token); !ok) return std::unexpected(ok.error());
  }
  Result<bool> overflow = RejectedUnchanged(
      *checked, [](DecoderKvSession& s) { return s.Decode(4); }, "Full { capacity: 4 }");
  if (!overflow) return std::unexpected(overflow.error());
  const bool unchanged = *decode_before_prefill && *prefill_nonempty && *overflow && rebuilt_model && changed_config;
  report += "errors=decode_before_prefill:" + Flag(*decode_before_prefill) +
            " prefill_nonempty:" + Flag(*prefill_nonempty) + " overflow:" + Flag(*overflow) +
            " rebuilt_model:" + Flag(rebuilt_model) + " changed_config:" + Flag(changed_config) +
            " unchanged:" + Flag(unchanged) + "\n";
  if (!unchanged) return std::unexpected(Invariant("a rejected call changed the state"));

  // history=: the score arithmetic behind the counters.
  const uint64_t lanes = config.layers * config.heads;
  const std::vector<size_t> cached_lengths = {1, prompt.size(), decoded_prefix.size()};
  const std::vector<size_t> complete_lengths = {prompt.size(), decoded_prefix.size()};
  uint64_t cached_sum = 0, complete_sum = 0;
  for (size_t len : cached_lengths) cached_sum += lanes * len;
  for (size_t len : complete_lengths) complete_sum += lanes * len * len;
  report += "history=lanes:" + std::to_string(lanes) + " cached_lengths:" + IntList(cached_lengths) +
            " cached_scores:" + std::to_string(cached_sum) +
            " complete_prefix_lengths:" + IntList(complete_lengths) +
            " complete_prefix_scores:" + std::to_string(complete_sum) +
            " avoided_scores:" + std::to_string(complete_sum - cached_sum) + "\n";
  if (cached_sum != work.attention_score_values || complete_sum != complete_scores) {
    return std::unexpected(Invariant("the score arithmetic disagrees with the measured counters"));
  }
  report += "next=assemble the complete end-to-end LLM pipeline\n";
  return report;
}

}  // namespace kvrt
