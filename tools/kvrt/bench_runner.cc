#include "bench_runner.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <span>

#include "kvrt/machine/machine_limits.h"
#include "kvrt/rng.h"
#include "kvrt/session.h"
#include "sample_statistics.h"

namespace kvrt::cli {
namespace {

double ProcessCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// Pseudo-random token ids, one sequence per slot: a benchmark must not depend on
// what the tokens mean, only that every slot reads different rows of the table.
std::vector<std::vector<uint32_t>> SlotTokens(size_t slots, size_t length, size_t vocabulary) {
  SplitMix64 rng(0x6b767274ull);  // "kvrt"
  std::vector<std::vector<uint32_t>> tokens(slots, std::vector<uint32_t>(length));
  for (auto& sequence : tokens) {
    for (uint32_t& token : sequence) token = static_cast<uint32_t>(rng.NextU64() % vocabulary);
  }
  return tokens;
}

// The steps of one run of a case, over a session of its slots. Every buffer is
// allocated here once, so that a timed run allocates nothing.
class CaseSteps {
 public:
  CaseSteps(Session& session, const BenchCase& bench_case, size_t vocabulary)
      : session_(session),
        case_(bench_case),
        tokens_(SlotTokens(bench_case.sequences, BenchCasePositions(bench_case), vocabulary)),
        offsets_(bench_case.sequences) {
    runs_.reserve(bench_case.sequences);
  }

  // The untimed part: the context depth (and the one-token prompt a decode-only
  // test needs at depth 0), from an empty cache.
  Result<void> Prepare() {
    session_.Reset();
    const bool decode_only = case_.test.prompt == 0;
    const size_t context = case_.depth + (decode_only && case_.depth == 0 ? 1 : 0);
    position_ = 0;
    if (context > 0) return Prefill(context, /*completes_prompt=*/decode_only);
    return {};
  }

  // The timed part: the test's prompt, then its decode steps.
  Result<void> RunTest() {
    if (case_.test.prompt > 0) {
      if (Result<void> prefilled = Prefill(case_.test.prompt, true); !prefilled) return prefilled;
    }
    for (size_t step = 0; step < case_.test.decode; ++step) {
      runs_.clear();
      for (size_t slot = 0; slot < case_.sequences; ++slot) {
        runs_.push_back({slot, std::span<const uint32_t>(tokens_[slot]).subspan(position_, 1), RunPhase::kDecode, true});
      }
      if (Result<SlotStepOutput> out = session_.Step(runs_); !out) return std::unexpected(out.error());
      ++position_;
    }
    return {};
  }

 private:
  // The next `count` tokens of every slot's prompt, in steps within the session's
  // row limits: each step takes a chunk of as many slots as fit.
  Result<void> Prefill(size_t count, bool completes_prompt) {
    std::fill(offsets_.begin(), offsets_.end(), size_t{0});
    const size_t per_run = session_.max_rows_per_run(), per_step = session_.max_rows_per_step();
    bool pending = true;
    while (pending) {
      runs_.clear();
      size_t rows = 0;
      pending = false;
      for (size_t slot = 0; slot < case_.sequences; ++slot) {
        const size_t left = count - offsets_[slot];
        const size_t chunk = std::min({left, per_run, per_step - rows});
        if (chunk == 0) {
          pending = pending || left > 0;
          continue;
        }
        const size_t end = offsets_[slot] + chunk;
        runs_.push_back({slot, std::span<const uint32_t>(tokens_[slot]).subspan(position_ + offsets_[slot], chunk),
                         RunPhase::kPrefill, completes_prompt && end == count});
        offsets_[slot] = end;
        rows += chunk;
        pending = pending || end < count;
      }
      if (Result<SlotStepOutput> out = session_.Step(runs_); !out) return std::unexpected(out.error());
    }
    position_ += count;
    return {};
  }

  Session& session_;
  const BenchCase& case_;
  std::vector<std::vector<uint32_t>> tokens_;
  std::vector<size_t> offsets_;
  std::vector<SlotRun> runs_;
  size_t position_ = 0;
};

// K/V bytes one decode token reads at `context` positions, in the cache's type.
double KvBytesPerToken(const ModelConfig& config, KvType kv_type, double context) {
  return context * static_cast<double>(KvBytesPerPosition(config, Precision::kF32, kv_type));
}

// FLOPs one sequence's prefill of `prompt` tokens after `depth` executes, counted as
// the engine runs it: 2 per weight of the blocks per token, the causal attention
// (scores and mix, 4·D per layer per earlier position), and the vocabulary head
// once (only the prompt's last row reaches it). Not 2·parameters per token: the
// token table is looked up, not multiplied, and a small model's vocabulary would
// otherwise dominate the count (a 4M-parameter model read 5× its "roofline").
//
// Split by the unit that runs them: `int8` the products of the matrices that take
// int8 activations (with `int8_activations`, the matrices ReachedByInt8Activations
// in `format`), `bf16` those of the bf16 matrices with `bf16_activations`, `fma` the
// rest.
struct PrefillOperations {
  double fma = 0;
  double int8 = 0;
  double bf16 = 0;
};

PrefillOperations PrefillOperationsOf(const Model& model, const BenchCase& bench_case) {
  const WeightFormat format = bench_case.weights;
  const size_t depth = bench_case.depth, prompt = bench_case.test.prompt;
  const ModelConfig& config = model.config();
  const double t = static_cast<double>(prompt), d = static_cast<double>(depth);
  PrefillOperations ops;
  PrefillOperations head;  // the last matrix as wide as the vocabulary: the head
  for (const MatrixWeightFormat& matrix : model.WeightPlan(format)) {
    const double weights = static_cast<double>(matrix.rows) * static_cast<double>(matrix.cols);
    const bool int8 = bench_case.int8_activations && ReachedByInt8Activations(matrix.effective);
    const bool bf16 = bench_case.bf16_activations && matrix.effective == WeightFormat::kBf16;
    const auto unit = [&](PrefillOperations& into) -> double& { return int8 ? into.int8 : bf16 ? into.bf16 : into.fma; };
    // The token table and the output head are the matrices as wide as the vocabulary.
    if (matrix.cols == config.vocabulary_size) {
      head = {};
      unit(head) = 2.0 * weights;
    } else {
      unit(ops) += 2.0 * t * weights;
    }
  }
  const double earlier_positions = t * d + t * (t + 1) / 2;
  ops.fma += 4.0 * static_cast<double>(config.model_width) * static_cast<double>(config.layers) * earlier_positions +
             head.fma;
  ops.int8 += head.int8;
  ops.bf16 += head.bf16;
  return ops;
}

double Roofline(const Model& model, const BenchCase& bench_case, double weight_bytes, double read_bytes_per_second,
                double fma_flops_per_second, double int8_dot_ops_per_second, double bf16_dot_flops_per_second) {
  const double sequences = static_cast<double>(bench_case.sequences);
  const double prompt = static_cast<double>(bench_case.test.prompt);
  const double decode = static_cast<double>(bench_case.test.decode);
  // Seconds at the limits: the prefill's FLOPs at the FMA peak (with int8 activations,
  // the int8 matrices' products at the int8 dot peak, with bf16 activations the bf16
  // matrices' at the bf16 dot peak); decode steps each
  // reading the weights once for all sequences and every sequence's K/V rows at
  // the mean context of the steps, at the read bandwidth.
  double prefill_seconds = 0;
  if (prompt > 0) {
    const PrefillOperations ops = PrefillOperationsOf(model, bench_case);
    prefill_seconds = sequences * ops.fma / fma_flops_per_second;
    if (ops.int8 > 0) prefill_seconds += sequences * ops.int8 / int8_dot_ops_per_second;
    if (ops.bf16 > 0) prefill_seconds += sequences * ops.bf16 / bf16_dot_flops_per_second;
  }
  const double context = static_cast<double>(bench_case.depth) + prompt + decode / 2.0 + 1.0;
  const double step_bytes = weight_bytes + sequences * KvBytesPerToken(model.config(), bench_case.kv_type, context);
  const double decode_seconds = decode * step_bytes / read_bytes_per_second;
  return sequences * (prompt + decode) / (prefill_seconds + decode_seconds);
}

}  // namespace

std::vector<double> BenchRow::TokensPerSecond() const {
  std::vector<double> rates;
  for (double run : seconds) rates.push_back(static_cast<double>(tokens) / run);
  return rates;
}

double BenchRow::MeanTokensPerSecond() const { return Mean(TokensPerSecond()); }

double BenchRow::StddevTokensPerSecond() const { return SampleStddev(TokensPerSecond()); }

double BenchRow::RooflineFraction() const {
  return roofline_tokens_per_second > 0 ? MeanTokensPerSecond() / roofline_tokens_per_second : 0;
}

double WeightBytesPerStep(const Model& model, WeightFormat format) {
  double bytes = 0;
  for (const MatrixWeightFormat& matrix : model.WeightPlan(format)) {
    bytes += static_cast<double>(matrix.rows) * static_cast<double>(matrix.cols) *
             WeightFormatBytesPerWeight(matrix.effective);
  }
  for (const ModelTensor& tensor : model.tensors()) {
    if (tensor.shape.size() == 1) bytes += sizeof(float) * static_cast<double>(tensor.shape[0]);
  }
  return bytes;
}

threading::ThreadPool& BenchRunner::PoolFor(size_t threads) {
  std::unique_ptr<threading::ThreadPool>& pool = pools_[threads];
  if (!pool) pool = std::make_unique<threading::ThreadPool>(threads);
  return *pool;
}

Result<BenchRow> BenchRunner::Run(const BenchCase& bench_case, size_t repetitions) {
  threading::ThreadPool& pool = PoolFor(bench_case.threads);
  EngineOptions engine;
  engine.pool = &pool;
  engine.weights = bench_case.weights;
  engine.int8_activations = bench_case.int8_activations;
  engine.bf16_activations = bench_case.bf16_activations;
  engine.kv_type = bench_case.kv_type;
  if (Result<void> valid = engine.Validate(); !valid) return std::unexpected(valid.error());
  if (Result<void> prepared = model_.PrepareWeights(engine); !prepared) return std::unexpected(prepared.error());
  SessionOptions options;
  options.engine = engine;
  options.capacity = BenchCasePositions(bench_case);
  options.batch_size = bench_case.sequences;
  Result<Session> session = Session::Open(model_, options);
  if (!session) return std::unexpected(session.error());
  CaseSteps steps(*session, bench_case, model_.config().vocabulary_size);

  BenchRow row;
  row.bench_case = bench_case;
  row.tokens = bench_case.sequences * (bench_case.test.prompt + bench_case.test.decode);
  row.weight_bytes = WeightBytesPerStep(model_, bench_case.weights);
  const size_t probe_bytes = static_cast<size_t>(row.weight_bytes);
  const double fma_before = machine::MeasureFmaFlopsPerSecond(pool);
  const double int8_before = bench_case.int8_activations ? machine::MeasureInt8DotOpsPerSecond(pool) : 0;
  const double bf16_before = bench_case.bf16_activations ? machine::MeasureBf16DotFlopsPerSecond(pool) : 0;
  const double read_before = machine::MeasureSizedReadBytesPerSecond(pool, probe_bytes);
  if (!(read_before > 0)) {
    return std::unexpected(Error(ErrorCode::kAllocationFailed, {{"", std::to_string(probe_bytes)}},
                                 "the read bandwidth probe could not allocate " + std::to_string(probe_bytes) +
                                     " bytes"));
  }
  for (size_t run = 0; run <= repetitions; ++run) {  // run 0 is the warm-up
    if (Result<void> prepared = steps.Prepare(); !prepared) return std::unexpected(prepared.error());
    const double cpu_start = ProcessCpuSeconds();
    const auto start = std::chrono::steady_clock::now();
    if (Result<void> ran = steps.RunTest(); !ran) return std::unexpected(ran.error());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double cpu_seconds = ProcessCpuSeconds() - cpu_start;
    if (run == 0) continue;
    row.seconds.push_back(seconds);
    row.cpu_seconds.push_back(cpu_seconds);
  }
  const double fma_after = machine::MeasureFmaFlopsPerSecond(pool);
  const double int8_after = bench_case.int8_activations ? machine::MeasureInt8DotOpsPerSecond(pool) : 0;
  const double bf16_after = bench_case.bf16_activations ? machine::MeasureBf16DotFlopsPerSecond(pool) : 0;
  const double read_after = machine::MeasureSizedReadBytesPerSecond(pool, probe_bytes);
  row.fma_flops_per_second = (fma_before + fma_after) / 2;
  row.int8_dot_ops_per_second = (int8_before + int8_after) / 2;
  row.bf16_dot_flops_per_second = (bf16_before + bf16_after) / 2;
  row.read_bytes_per_second = read_after > 0 ? (read_before + read_after) / 2 : read_before;
  row.roofline_tokens_per_second =
      Roofline(model_, bench_case, row.weight_bytes, row.read_bytes_per_second, row.fma_flops_per_second,
               row.int8_dot_ops_per_second, row.bf16_dot_flops_per_second);
  return row;
}

}  // namespace kvrt::cli
