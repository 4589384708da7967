// Runs one `kvrt bench` case on a loaded model through the public API: a session
// of the case's slots on a pool of its threads, one warm-up run and the timed
// runs, with the machine's read bandwidth and FMA peak probed on the same pool
// right before and right after them (kvrt/machine/machine_limits.h, the probes the
// benchmark binaries use).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <vector>

#include "bench_plan.h"
#include "kvrt/error.h"
#include "kvrt/model.h"
#include "kvrt/threading/thread_pool.h"

namespace kvrt::cli {

struct BenchRow {
  BenchCase bench_case;
  size_t tokens = 0;                // tokens one run processes, over all sequences
  std::vector<double> seconds;      // wall seconds of every timed run
  std::vector<double> cpu_seconds;  // process CPU seconds of every timed run
  // The probes, each the mean of its reading before and after the timed runs: on a
  // shared machine the limits drift, and a row is judged against the machine it ran on.
  double read_bytes_per_second = 0;
  double fma_flops_per_second = 0;
  // Rows with int8 activations only (0 otherwise): the int8 dot peak, in operations
  // (2 per byte product).
  double int8_dot_ops_per_second = 0;
  // Rows with bf16 activations only (0 otherwise): the bf16 dot peak, in FLOPs.
  double bf16_dot_flops_per_second = 0;
  double weight_bytes = 0;  // what one step reads of the weights in the case's format
  // The fastest the case could run on these probes: prefill at the FMA peak over
  // the FLOPs it executes (2 per block weight and token, the causal attention, the
  // head once) — with int8 activations, the products of the matrices that take them
  // at the int8 dot peak instead —, decode at the read bandwidth over the bytes a
  // token reads (the weights, shared by the sequences of a step, and its K/V rows).
  double roofline_tokens_per_second = 0;

  std::vector<double> TokensPerSecond() const;  // one per timed run
  double MeanTokensPerSecond() const;
  double StddevTokensPerSecond() const;  // sample standard deviation; 0 for one run
  double RooflineFraction() const;       // mean tokens/s over the roofline's
};

class BenchRunner {
 public:
  explicit BenchRunner(const Model& model) : model_(model) {}

  // Errors: the engine's (UnsupportedBackend for an impossible combination), the
  // session's (Cache(...) when the K/V cache cannot be allocated), a step's, and
  // AllocationFailed when the bandwidth probe gets no buffer.
  Result<BenchRow> Run(const BenchCase& bench_case, size_t repetitions);

 private:
  threading::ThreadPool& PoolFor(size_t threads);

  const Model& model_;
  std::map<size_t, std::unique_ptr<threading::ThreadPool>> pools_;
};

// Bytes one step reads of `model`'s weights kept in `format`: every planned matrix
// at its effective format's bytes per weight, and the f32 gains.
double WeightBytesPerStep(const Model& model, WeightFormat format);

}  // namespace kvrt::cli
