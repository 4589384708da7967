// Shared helpers of the GGUF tests: fixture paths, the llama.cpp logit files,
// per-position logits through a kvrt session, and a plain f64 forward pass.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/gguf/gguf_file.h"
#include "formats/gguf/gguf_llama.h"
#include "kv/decoder_kv_cache.h"
#include "model/decoder_model.h"
#include "session/decoder_kv_session.h"
#include "sanitizer_build.h"

namespace kvrt::gguf::testing {

inline std::string FixturePath(const std::string& name) {
  return std::string(KVRT_FIXTURES_DIR) + "/gguf/" + name;
}

// One fixture file with its tolerance against llama.cpp (fixtures README §3).
struct FixtureType {
  const char* type;  // "f32", ... (a file type: "q4_k_m" mixes Q4_K and Q6_K)
  double bound;
  const char* stem = nullptr;  // the files' path under fixtures/gguf without extension
};
inline constexpr FixtureType kFixtureTypes[] = {{"f32", 1e-5, "tiny-f32"},
                                                {"f16", 3e-3, "tiny-f16"},
                                                {"bf16", 2e-2, "tiny-bf16"},
                                                {"q8_0", 6e-2, "tiny-q8_0"},
                                                {"q4_0", 6e-2, "tiny-q4_0"}};
// The one model of fixtures/gguf/modern in every tensor type llama-quantize writes.
// llama.cpp multiplies these weights by activations rounded to 8 bits (q8_0 blocks
// of 32 for the legacy and IQ4_NL types, q8_K super-blocks of 256 for the K-quants
// and IQ4_XS, whose one scale spans 8× as many values), so its logits sit that far
// from the exact ones: measured 0.055–0.076 and 0.087–0.106 on these files, while
// kvrt's reference engine equals a plain f64 forward pass to 1e-14. The bounds
// leave a quarter of headroom over the measured distance.
inline constexpr double kQ8BlockBound = 0.09, kQ8SuperBlockBound = 0.13;
inline constexpr FixtureType kModernTypes[] = {
    {"f32", 1e-5, "modern/kq-f32"},
    {"q8_0", kQ8BlockBound, "modern/kq-q8_0"},
    {"q4_0", kQ8BlockBound, "modern/kq-q4_0"},
    {"q4_1", kQ8BlockBound, "modern/kq-q4_1"},
    {"q5_0", kQ8BlockBound, "modern/kq-q5_0"},
    {"q5_1", kQ8BlockBound, "modern/kq-q5_1"},
    {"iq4_nl", kQ8BlockBound, "modern/kq-iq4_nl"},
    {"iq4_xs", kQ8SuperBlockBound, "modern/kq-iq4_xs"},
    {"q2_k", kQ8SuperBlockBound, "modern/kq-q2_k"},
    {"q3_k_m", kQ8SuperBlockBound, "modern/kq-q3_k_m"},
    {"q4_k_s", kQ8SuperBlockBound, "modern/kq-q4_k_s"},
    {"q4_k_m", kQ8SuperBlockBound, "modern/kq-q4_k_m"},
    {"q5_k_m", kQ8SuperBlockBound, "modern/kq-q5_k_m"},
    {"q6_k", kQ8SuperBlockBound, "modern/kq-q6_k"}};

// Opens a test that runs fixture `t` whole: in a sanitizer build only a sample of the
// files runs (sanitizer_build.h), the others are skipped with the reason.
#define KVRT_SKIP_FIXTURE_OUTSIDE_SANITIZER_SAMPLE(t)             \
  if (!::kvrt::sanitizer_build::FileRunsInThisBuild((t).stem)) \
  GTEST_SKIP() << ::kvrt::sanitizer_build::kSanitizerSkipReason

inline std::string ModelPath(const FixtureType& t) { return FixturePath(std::string(t.stem) + ".gguf"); }

inline const nlohmann::json& LlamaCppLogits(const FixtureType& t) {
  static std::map<std::string, nlohmann::json> cache;
  auto [it, inserted] = cache.try_emplace(t.stem);
  if (inserted) {
    std::ifstream in(FixturePath(std::string(t.stem) + ".logits.json"));
    it->second = nlohmann::json::parse(in);
  }
  return it->second;
}

using Rows = std::vector<std::vector<double>>;  // [position][vocabulary id]

// The logits at every position of `tokens`: a prefill of the first token, then
// one decode per further token, through a session of `engine`.
inline Rows SessionLogits(const DecoderModel& model, const std::vector<uint32_t>& tokens, EngineOptions engine) {
  CacheOptions options;
  options.precision = engine.precision;
  Result<DecoderKvCache> cache = DecoderKvCache::Create(model, options);
  EXPECT_TRUE(cache) << cache.error().Debug();
  Result<DecoderKvSession> session = Bind(*cache, model, engine);
  EXPECT_TRUE(session) << session.error().Debug();
  Rows rows;
  for (size_t i = 0; i < tokens.size(); ++i) {
    Result<StepOutput> step = i == 0 ? session->Prefill(std::span(tokens).first(1)) : session->Decode(tokens[i]);
    EXPECT_TRUE(step) << step.error().Debug();
    if (!step) return rows;
    rows.emplace_back(step->logits.begin(), step->logits.end());
  }
  return rows;
}

// Max |kvrt − llama.cpp| over the ids llama.cpp recorded for one sequence: the
// top-8 and the 500 sampled columns at every position, and the whole last row
// when recorded.
inline double CompareWithLlamaCpp(const Rows& ours, const nlohmann::json& sequence, const nlohmann::json& cols) {
  double worst = 0.0;
  auto check = [&](size_t position, uint32_t id, double theirs) {
    worst = std::max(worst, std::fabs(ours[position][id] - theirs));
  };
  for (size_t p = 0; p < ours.size(); ++p) {
    const auto& ids = sequence["topk_ids"][p];
    for (size_t j = 0; j < ids.size(); ++j) check(p, ids[j].get<uint32_t>(), sequence["topk_logits"][p][j].get<double>());
    for (size_t i = 0; i < cols.size(); ++i) check(p, cols[i].get<uint32_t>(), sequence["logits_cols"][p][i].get<double>());
  }
  if (sequence.contains("logits_last")) {
    const auto& last = sequence["logits_last"];
    for (size_t id = 0; id < last.size(); ++id) check(ours.size() - 1, static_cast<uint32_t>(id), last[id].get<double>());
  }
  return worst;
}

// argmax, ties to the lowest id (llama.cpp's greedy rule in the fixtures).
inline uint32_t Argmax(const std::vector<double>& row) {
  size_t best = 0;
  for (size_t i = 1; i < row.size(); ++i) {
    if (row[i] > row[best]) best = i;
  }
  return static_cast<uint32_t>(best);
}

inline std::vector<uint32_t> Ids(const nlohmann::json& list) { return list.get<std::vector<uint32_t>>(); }

// Greedy decoding of one fixture sequence against llama.cpp's recorded greedy
// tokens. Free running (f32), every token must be llama.cpp's; otherwise the
// session is fed llama.cpp's tokens and must pick the same one wherever llama.cpp's
// winning margin exceeds twice the logit bound. Prints how many were compared.
inline void ExpectGreedyFollowsLlamaCpp(const DecoderModel& model, const EngineOptions& engine,
                                        const nlohmann::json& sequence, const char* type, double bound,
                                        bool free_running) {
  const std::vector<uint32_t> greedy = Ids(sequence["greedy"]);
  const std::vector<double> margins = sequence["greedy_margin"].get<std::vector<double>>();
  CacheOptions options;
  options.precision = engine.precision;
  DecoderKvCache cache = *DecoderKvCache::Create(model, options);
  DecoderKvSession session = *Bind(cache, model, engine);
  Result<StepOutput> step = session.Prefill(Ids(sequence["tokens"]));
  ASSERT_TRUE(step) << step.error().Debug();
  size_t compared = 0;
  for (size_t i = 0; i < greedy.size(); ++i) {
    const uint32_t ours = Argmax(std::vector<double>(step->logits.begin(), step->logits.end()));
    if (free_running || margins[i] > 2 * bound) {
      EXPECT_EQ(ours, greedy[i]) << type << " " << sequence["name"] << " step " << i << " engine "
                                 << BackendName(engine.backend);
      ++compared;
    }
    step = session.Decode(free_running ? ours : greedy[i]);
    ASSERT_TRUE(step) << step.error().Debug();
  }
  std::printf("[ gguf ] %-14s %s %s: %zu of %zu greedy tokens compared\n", type,
              sequence["name"].get<std::string>().c_str(), std::string(BackendName(engine.backend)).c_str(),
              compared, greedy.size());
}

// A deliberately plain f64 llama forward pass over the dequantized tensors of a
// GGUF file, independent of kvrt's model and engines: RMSNorm, interleaved-pair
// RoPE, grouped-query causal attention, SwiGLU, output head.
class PlainLlama {
 public:
  explicit PlainLlama(const GgufFile& file) : file_(file) {
    d_ = *file.Get<uint32_t>("llama.embedding_length");
    layers_ = *file.Get<uint32_t>("llama.block_count");
    f_ = *file.Get<uint32_t>("llama.feed_forward_length");
    heads_ = *file.Get<uint32_t>("llama.attention.head_count");
    kv_heads_ = file.Find("llama.attention.head_count_kv") ? *file.Get<uint32_t>("llama.attention.head_count_kv")
                                                           : heads_;
    eps_ = *file.Get<float>("llama.attention.layer_norm_rms_epsilon");
    base_ = file.Find("llama.rope.freq_base") ? *file.Get<float>("llama.rope.freq_base") : 10000.0;
    // llama.cpp: a missing scaling type is linear; freq_scale = 1/factor (f32),
    // the factor from rope.scaling.factor or the older rope.scale_linear, 0 = none.
    const Value* type = file.Find("llama.rope.scaling.type");
    const bool none = type != nullptr && type->string == "none";
    float factor = 0.0f;
    for (const char* key : {"llama.rope.scaling.factor", "llama.rope.scale_linear"}) {
      if (factor == 0.0f && file.Find(key)) factor = *file.Get<float>(key);
    }
    freq_scale_ = none || factor == 0.0f ? 1.0 : static_cast<double>(1.0f / factor);
    hw_ = d_ / heads_;
    embedding_ = Tensor("token_embd.weight");
    output_ = file.FindTensor("output.weight") ? Tensor("output.weight") : embedding_;
    vocabulary_ = embedding_.size() / d_;
  }

  // Every tensor as f64 in storage order (ne1 rows of ne0).
  std::vector<double> Tensor(const std::string& name) const {
    const TensorInfo& t = *file_.FindTensor(name);
    std::vector<float> values(t.elements);
    Dequantize(t.type, t.data, values);
    return std::vector<double>(values.begin(), values.end());
  }

  Rows Forward(const std::vector<uint32_t>& tokens) const {
    const size_t n = tokens.size(), kvw = kv_heads_ * hw_;
    std::vector<std::vector<double>> x(n);
    for (size_t p = 0; p < n; ++p) x[p].assign(embedding_.begin() + tokens[p] * d_, embedding_.begin() + (tokens[p] + 1) * d_);
    for (size_t l = 0; l < layers_; ++l) {
      const std::string b = "blk." + std::to_string(l) + ".";
      const auto wq = Tensor(b + "attn_q.weight"), wk = Tensor(b + "attn_k.weight"), wv = Tensor(b + "attn_v.weight");
      const auto wo = Tensor(b + "attn_output.weight"), an = Tensor(b + "attn_norm.weight");
      const auto fn = Tensor(b + "ffn_norm.weight"), wg = Tensor(b + "ffn_gate.weight");
      const auto wu = Tensor(b + "ffn_up.weight"), wd = Tensor(b + "ffn_down.weight");
      std::vector<std::vector<double>> q(n), k(n), v(n);
      for (size_t p = 0; p < n; ++p) {
        const auto h = Norm(x[p], an);
        q[p] = MatVec(wq, h, d_);
        k[p] = MatVec(wk, h, kvw);
        v[p] = MatVec(wv, h, kvw);
        Rope(q[p], p);
        Rope(k[p], p);
      }
      for (size_t p = 0; p < n; ++p) {
        std::vector<double> attended(d_, 0.0);
        for (size_t head = 0; head < heads_; ++head) {
          const size_t kvh = head / (heads_ / kv_heads_);
          std::vector<double> scores(p + 1);
          double max = -INFINITY;
          for (size_t s = 0; s <= p; ++s) {
            double dot = 0.0;
            for (size_t i = 0; i < hw_; ++i) dot += q[p][head * hw_ + i] * k[s][kvh * hw_ + i];
            scores[s] = dot / std::sqrt(static_cast<double>(hw_));
            max = std::max(max, scores[s]);
          }
          double sum = 0.0;
          for (double& s : scores) sum += (s = std::exp(s - max));
          for (size_t s = 0; s <= p; ++s) {
            for (size_t i = 0; i < hw_; ++i) attended[head * hw_ + i] += scores[s] / sum * v[s][kvh * hw_ + i];
          }
        }
        const auto o = MatVec(wo, attended, d_);
        for (size_t i = 0; i < d_; ++i) x[p][i] += o[i];
        const auto h = Norm(x[p], fn);
        const auto g = MatVec(wg, h, f_), u = MatVec(wu, h, f_);
        std::vector<double> a(f_);
        for (size_t i = 0; i < f_; ++i) a[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
        const auto down = MatVec(wd, a, d_);
        for (size_t i = 0; i < d_; ++i) x[p][i] += down[i];
      }
    }
    const auto final_norm = Tensor("output_norm.weight");
    Rows logits(n);
    for (size_t p = 0; p < n; ++p) logits[p] = MatVec(output_, Norm(x[p], final_norm), vocabulary_);
    return logits;
  }

  size_t vocabulary() const { return vocabulary_; }

 private:
  // y = W·x for W stored as `rows` rows of x.size() values.
  static std::vector<double> MatVec(const std::vector<double>& w, const std::vector<double>& x, size_t rows) {
    std::vector<double> y(rows, 0.0);
    for (size_t r = 0; r < rows; ++r) {
      for (size_t c = 0; c < x.size(); ++c) y[r] += w[r * x.size() + c] * x[c];
    }
    return y;
  }
  std::vector<double> Norm(const std::vector<double>& x, const std::vector<double>& w) const {
    double sum = 0.0;
    for (double v : x) sum += v * v;
    const double scale = 1.0 / std::sqrt(sum / static_cast<double>(x.size()) + eps_);
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * w[i];
    return y;
  }
  // Rotates the pairs (2i, 2i+1) of every head by freq_scale·p·base^(−2i/hw).
  void Rope(std::vector<double>& x, size_t p) const {
    for (size_t head = 0; head < x.size() / hw_; ++head) {
      for (size_t i = 0; i < hw_ / 2; ++i) {
        const double angle = freq_scale_ * static_cast<double>(p) *
                             std::pow(base_, -2.0 * static_cast<double>(i) / static_cast<double>(hw_));
        double& a = x[head * hw_ + 2 * i];
        double& b = x[head * hw_ + 2 * i + 1];
        const double a0 = a, b0 = b;
        a = a0 * std::cos(angle) - b0 * std::sin(angle);
        b = a0 * std::sin(angle) + b0 * std::cos(angle);
      }
    }
  }

  const GgufFile& file_;
  size_t d_ = 0, layers_ = 0, f_ = 0, heads_ = 0, kv_heads_ = 0, hw_ = 0, vocabulary_ = 0;
  double eps_ = 0.0, base_ = 10000.0, freq_scale_ = 1.0;
  std::vector<double> embedding_, output_;
};

inline double MaxDifference(const Rows& a, const Rows& b) {
  double worst = 0.0;
  for (size_t p = 0; p < a.size() && p < b.size(); ++p) {
    for (size_t i = 0; i < a[p].size() && i < b[p].size(); ++i) worst = std::max(worst, std::fabs(a[p][i] - b[p][i]));
  }
  return worst;
}

}  // namespace kvrt::gguf::testing
