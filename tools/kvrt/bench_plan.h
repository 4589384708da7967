// What `kvrt bench` runs: its flags (llama-bench's spellings) turned into the list
// of cases, one output row each. Every flag's values are checked here, before a
// model is loaded, so that a typo costs no time.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "flags.h"
#include "kvrt/engine_options.h"
#include "kvrt/error.h"
#include "kvrt/weight_format.h"

namespace kvrt::cli {

// One of llama-bench's tests: a prefill of `prompt` tokens (pp), `decode` decode
// steps (tg), or both in a row (pp+tg, `-pg`).
struct BenchTest {
  size_t prompt = 0;
  size_t decode = 0;
};

// "pp512", "tg128" or "pp512+tg128", as llama-bench names them.
std::string BenchTestName(const BenchTest& test);

// One row: a test at a context depth with `sequences` in flight, on one engine.
struct BenchCase {
  BenchTest test;
  size_t depth = 0;      // K/V rows every sequence holds before the timed test
  size_t sequences = 1;  // slots of one cache, each running the test
  size_t threads = 1;
  WeightFormat weights = WeightFormat::kAsStored;
  bool int8_activations = false;
  KvType kv_type = KvType::kEngine;  // the engine's f32, f16 or bf16
  bool bf16_activations = false;
};

// The row's name in the JSON output (Google Benchmark's "run_name"; bench-compare
// matches rows by it): "pp512/depth:0/seqs:1/threads:2/weights:q8_0/int8:0", and
// "/kv:f16" or "/kv:bf16" after it for a 16-bit cache (an f32 cache's rows keep the
// names they had before the cache type was a choice, so older baselines still match).
std::string BenchCaseName(const BenchCase& bench_case);

// Positions one sequence needs: the depth, the prompt, and the decode steps (a
// decode-only test first prefills one token when its depth is 0: decoding needs a
// prompt).
size_t BenchCasePositions(const BenchCase& bench_case);

enum class BenchOutput { kMarkdown, kCsv, kJson, kJsonLines };

struct BenchPlan {
  std::string model_path;
  std::vector<BenchCase> cases;
  size_t repetitions = 5;
  BenchOutput output = BenchOutput::kMarkdown;
  bool quiet = false;
};

// The flags of `kvrt bench`, for its parser and its --help.
extern const FlagSpec kBenchFlags[];
extern const size_t kBenchFlagCount;

// InvalidArgument for a missing --model, an empty or malformed list, a value out
// of range or repeated, or flags that leave no test to run.
Result<BenchPlan> BenchPlanFromFlags(const Flags& flags);

}  // namespace kvrt::cli
