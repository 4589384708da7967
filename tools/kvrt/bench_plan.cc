#include "bench_plan.h"

#include <algorithm>
#include <iterator>
#include <string_view>

#include "common.h"
#include "kvrt/engine_options.h"
#include "kvrt/version.h"
#include "number_text.h"

namespace kvrt::cli {

const FlagSpec kBenchFlags[] = {
    {"model", true, "the model file to measure (GGUF, llama2.c, LLMCP35)", 'm'},
    {"n-prompt", true, "prefill tests: prompt lengths, comma list (default 512; 0: none)", 'p'},
    {"n-gen", true, "decode tests: decode steps, comma list (default 128; 0: none)", 'n'},
    {"n-pg", true, "prefill-then-decode test PROMPT,STEPS (repeatable; default none)", 0, nullptr, true, "-pg"},
    {"n-depth", true, "context depth: K/V rows each sequence holds before the test, comma list (default 0)", 'd'},
    {"sequences", true, "sequences in flight, each in a slot of one cache, comma list (default 1)"},
    {"threads", true, "worker threads, comma list (default: $KVRT_THREADS, else all cores)", 't'},
    {"weights", true,
     "weight formats, comma list of as-stored (default), f32, bf16, f16, q8_0, q4_0, q5_0, q4_1, q5_1, iq4_nl, iq4_xs, "
     "q2_k, q3_k, q4_k, q5_k, q6_k"},
    {"int8-activations", true, "0 (f32 activations, default), 1 (int8 on every quantized matrix), comma list"},
    {"bf16-activations", true, "0 (f32 activations, default), 1 (bf16 on every bf16 matrix), comma list"},
    {"kv-type", true, "K/V cache types, comma list of f32 (default), f16, bf16, q8_0"},
    {"repetitions", true, "timed runs of every row, after one warm-up run (default 5)", 'r'},
    {"output", true, "md (default: a markdown table), csv, json (Google Benchmark's shape) or jsonl", 'o'},
    {"quiet", false, "no progress lines on stderr", 'q'},
    {"help", false, "show this help", 'h'},
};
const size_t kBenchFlagCount = std::size(kBenchFlags);

namespace {

constexpr size_t kMaxRepetitions = 1000;
constexpr size_t kMaxSequences = 4096;

// The items of a comma list, each read by `parse` (a value, or the error naming
// what was wrong with it), none twice: a repeated value would give two rows of one
// name.
template <class T, class Parse>
Result<std::vector<T>> CommaList(const std::string& flag, const std::string& text, Parse parse) {
  std::vector<T> values;
  std::string_view rest = text;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    Result<T> value = parse(item);
    if (!value) return std::unexpected(value.error());
    if (std::find(values.begin(), values.end(), *value) != values.end()) {
      return std::unexpected(InvalidArgument("--" + flag + " lists " + std::string(item) + " twice"));
    }
    values.push_back(*value);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return values;
}

// "1,2,4" → decimal numbers in [minimum, maximum].
Result<std::vector<size_t>> NumberList(const std::string& flag, const std::string& text, size_t minimum,
                                       size_t maximum) {
  return CommaList<size_t>(flag, text, [&](std::string_view item) -> Result<size_t> {
    const std::optional<uint64_t> number = ParseDecimalU64(item);
    if (!number) {
      return std::unexpected(InvalidArgument("--" + flag + " needs a comma list of numbers, got '" +
                                             std::string(item) + "' in '" + text + "'"));
    }
    if (*number < minimum || *number > maximum) {
      return std::unexpected(InvalidArgument("--" + flag + " values must be in [" + std::to_string(minimum) + ", " +
                                             std::to_string(maximum) + "], got " + std::string(item)));
    }
    return static_cast<size_t>(*number);
  });
}

Result<std::vector<size_t>> NumberFlag(const Flags& flags, const std::string& flag, const std::string& fallback,
                                       size_t minimum, size_t maximum) {
  return NumberList(flag, flags.Value(flag).value_or(fallback), minimum, maximum);
}

Result<std::vector<WeightFormat>> WeightList(const Flags& flags) {
  return CommaList<WeightFormat>(
      "weights", flags.Value("weights").value_or("as-stored"), [](std::string_view item) -> Result<WeightFormat> {
        const std::optional<WeightFormat> format = ParseWeightFormat(item);
        if (!format) {
          return std::unexpected(InvalidArgument(std::string("--weights values must be ") + kWeightFormatChoices +
                                                 ", got '" + std::string(item) + "'"));
        }
        return *format;
      });
}

// f32 (the engine's own type), f16, bf16 or q8_0.
Result<std::vector<KvType>> KvTypeList(const Flags& flags) {
  const auto parse = [](std::string_view item) -> Result<KvType> {
    if (item == "f32") return KvType::kEngine;
    if (item == "f16") return KvType::kF16;
    if (item == "bf16") return KvType::kBf16;
    if (item == "q8_0") return KvType::kQ8_0;
    return std::unexpected(
        InvalidArgument("--kv-type values must be f32, f16, bf16 or q8_0, got '" + std::string(item) + "'"));
  };
  return CommaList<KvType>("kv-type", flags.Value("kv-type").value_or("f32"), parse);
}

Result<BenchOutput> OutputFormat(const Flags& flags) {
  const std::string name = flags.Value("output").value_or("md");
  if (name == "md") return BenchOutput::kMarkdown;
  if (name == "csv") return BenchOutput::kCsv;
  if (name == "json") return BenchOutput::kJson;
  if (name == "jsonl") return BenchOutput::kJsonLines;
  return std::unexpected(InvalidArgument("--output must be md, csv, json or jsonl, got '" + name + "'"));
}

Result<std::vector<BenchTest>> Tests(const Flags& flags) {
  constexpr size_t kMaxTokens = size_t{1} << 24;
  Result<std::vector<size_t>> prompts = NumberFlag(flags, "n-prompt", "512", 0, kMaxTokens);
  if (!prompts) return std::unexpected(prompts.error());
  Result<std::vector<size_t>> steps = NumberFlag(flags, "n-gen", "128", 0, kMaxTokens);
  if (!steps) return std::unexpected(steps.error());
  std::vector<BenchTest> tests;
  for (size_t prompt : *prompts) {
    if (prompt > 0) tests.push_back({prompt, 0});
  }
  for (size_t decode : *steps) {
    if (decode > 0) tests.push_back({0, decode});
  }
  for (const std::string& pair : flags.Values("n-pg")) {
    Result<std::vector<size_t>> numbers = NumberList("n-pg", pair, 1, kMaxTokens);
    if (!numbers) return std::unexpected(numbers.error());
    if (numbers->size() != 2) {
      return std::unexpected(InvalidArgument("-pg needs PROMPT,STEPS (two numbers), got '" + pair + "'"));
    }
    tests.push_back({(*numbers)[0], (*numbers)[1]});
  }
  if (tests.empty()) return std::unexpected(InvalidArgument("no test to run: give -p, -n or -pg a non-zero length"));
  return tests;
}

}  // namespace

std::string BenchTestName(const BenchTest& test) {
  if (test.decode == 0) return "pp" + std::to_string(test.prompt);
  if (test.prompt == 0) return "tg" + std::to_string(test.decode);
  return "pp" + std::to_string(test.prompt) + "+tg" + std::to_string(test.decode);
}

std::string BenchCaseName(const BenchCase& bench_case) {
  return BenchTestName(bench_case.test) + "/depth:" + std::to_string(bench_case.depth) +
         "/seqs:" + std::to_string(bench_case.sequences) + "/threads:" + std::to_string(bench_case.threads) +
         "/weights:" + std::string(WeightFormatName(bench_case.weights)) +
         "/int8:" + (bench_case.int8_activations ? "1" : "0") +
         (bench_case.kv_type == KvType::kEngine ? "" : "/kv:" + std::string(KvTypeName(bench_case.kv_type))) +
         (bench_case.bf16_activations ? "/bf16:1" : "");
}

size_t BenchCasePositions(const BenchCase& bench_case) {
  const bool primes = bench_case.test.prompt == 0 && bench_case.depth == 0;
  return bench_case.depth + (primes ? 1 : 0) + bench_case.test.prompt + bench_case.test.decode;
}

Result<BenchPlan> BenchPlanFromFlags(const Flags& flags) {
  BenchPlan plan;
  Result<std::string> model = flags.Required("model");
  if (!model) return std::unexpected(model.error());
  plan.model_path = *model;
  Result<std::vector<BenchTest>> tests = Tests(flags);
  if (!tests) return std::unexpected(tests.error());
  Result<std::vector<size_t>> depths = NumberFlag(flags, "n-depth", "0", 0, size_t{1} << 24);
  if (!depths) return std::unexpected(depths.error());
  Result<std::vector<size_t>> sequences = NumberFlag(flags, "sequences", "1", 1, kMaxSequences);
  if (!sequences) return std::unexpected(sequences.error());
  Result<std::vector<size_t>> threads =
      NumberFlag(flags, "threads", std::to_string(DefaultThreads()), 1, EngineOptions::kMaxThreads);
  if (!threads) return std::unexpected(threads.error());
  Result<std::vector<WeightFormat>> weights = WeightList(flags);
  if (!weights) return std::unexpected(weights.error());
  Result<std::vector<size_t>> int8 = NumberFlag(flags, "int8-activations", "0", 0, 1);
  if (!int8) return std::unexpected(int8.error());
  Result<std::vector<size_t>> bf16 = NumberFlag(flags, "bf16-activations", "0", 0, 1);
  if (!bf16) return std::unexpected(bf16.error());
  Result<std::vector<KvType>> kv_types = KvTypeList(flags);
  if (!kv_types) return std::unexpected(kv_types.error());
  Result<std::vector<size_t>> repetitions = NumberFlag(flags, "repetitions", "5", 1, kMaxRepetitions);
  if (!repetitions) return std::unexpected(repetitions.error());
  if (repetitions->size() != 1) return std::unexpected(InvalidArgument("--repetitions takes one number"));
  plan.repetitions = repetitions->front();
  Result<BenchOutput> output = OutputFormat(flags);
  if (!output) return std::unexpected(output.error());
  plan.output = *output;
  plan.quiet = flags.Has("quiet");
  for (WeightFormat format : *weights) {
    for (size_t activations : *int8) {
     for (size_t bf16_activations : *bf16) {
      for (KvType kv_type : *kv_types) {
        for (size_t thread_count : *threads) {
          for (size_t in_flight : *sequences) {
            for (size_t depth : *depths) {
              for (const BenchTest& test : *tests) {
                plan.cases.push_back(
                    {test, depth, in_flight, thread_count, format, activations == 1, kv_type, bf16_activations == 1});
              }
            }
          }
        }
      }
     }
    }
  }
  return plan;
}

}  // namespace kvrt::cli
