// kvrt bench: how fast a model runs on this machine, llama-bench style.
//
//   kvrt bench --model M [-p 512] [-n 128] [-pg 512,128] [-d 0,4096] [--sequences 1,4,16]
//              [-t 1,2] [--weights as-stored,q8_0] [--int8-activations 0,1] [--bf16-activations 0,1] [--kv-type f32,f16] [-r 5]
//              [-o md|csv|json|jsonl] [-q]
//
// Every combination of the lists is one row: one warm-up run, then -r timed runs,
// tokens/s as mean ± standard deviation and every sample, beside the machine's
// read bandwidth and FMA peak probed on the row's own pool and the row's fraction
// of the roofline they give. Progress goes to stderr, a line per row with the
// time left; the table (or CSV, JSON, JSON lines) to stdout once every row ran.
// docs/cli.md (`kvrt bench`) describes the output.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench_output.h"
#include "bench_plan.h"
#include "bench_runner.h"
#include "commands.h"
#include "common.h"
#include "kvrt/load_model.h"
#include "output.h"

namespace kvrt::cli {
namespace {

// Every case must fit the model's context before the first one runs: a sweep
// must not fail an hour in.
Result<void> CheckCasesFit(const BenchPlan& plan, const Model& model) {
  const size_t positions = model.config().max_positions;
  for (const BenchCase& bench_case : plan.cases) {
    if (BenchCasePositions(bench_case) > positions) {
      return std::unexpected(InvalidArgument(BenchTestName(bench_case.test) + " at depth " +
                                             std::to_string(bench_case.depth) + " needs " +
                                             std::to_string(BenchCasePositions(bench_case)) +
                                             " positions; the model has " + std::to_string(positions)));
    }
  }
  return {};
}

// A row asking for more threads than the process may run on is still run (the
// user may mean it), but said once per thread count: its tokens/s are not those
// of that many cores.
void WarnAboutSharedCores(const BenchPlan& plan, size_t usable_cores) {
  std::vector<size_t> warned;
  for (const BenchCase& bench_case : plan.cases) {
    if (bench_case.threads <= usable_cores) continue;
    if (std::find(warned.begin(), warned.end(), bench_case.threads) != warned.end()) continue;
    warned.push_back(bench_case.threads);
    std::fprintf(stderr,
                 "kvrt bench: warning: -t %zu asks for more threads than the %zu CPU(s) this process may run on "
                 "(its affinity mask); those rows share cores\n",
                 bench_case.threads, usable_cores);
  }
}

std::string Duration(double seconds) {
  const long total = static_cast<long>(seconds + 0.5);
  char text[32];
  std::snprintf(text, sizeof text, "%ld:%02ld", total / 60, total % 60);
  return text;
}

void PrintProgress(size_t done, size_t total, const BenchRow& row, double elapsed) {
  const double left = elapsed / static_cast<double>(done) * static_cast<double>(total - done);
  std::fprintf(stderr, "kvrt bench: [%zu/%zu] %s: %.2f ± %.2f t/s, %.3f of roofline; elapsed %s, ETA %s\n", done,
               total, BenchCaseName(row.bench_case).c_str(), row.MeanTokensPerSecond(), row.StddevTokensPerSecond(),
               row.RooflineFraction(), Duration(elapsed).c_str(), Duration(left).c_str());
}

}  // namespace

int RunBench(std::span<char* const> args) {
  const std::span<const FlagSpec> specs(kBenchFlags, kBenchFlagCount);
  Result<Flags> flags = Flags::Parse(args, specs);
  if (!flags) return ReportError(flags.error());
  if (flags->Has("help")) {
    PrintStdout("%s", Usage("kvrt bench --model M [-p N,..] [-n N,..] [-pg P,N] [-d N,..] [--sequences N,..] "
                            "[-t N,..] [--weights F,..] [--int8-activations 0,1] [--bf16-activations 0,1] [--kv-type T,..] [-r N] [-o md|csv|json|jsonl] [-q]",
                            specs)
                          .c_str());
    return 0;
  }
  Result<BenchPlan> plan = BenchPlanFromFlags(*flags);
  if (!plan) return ReportError(plan.error());
  Result<LoadedModel> loaded = LoadModel(plan->model_path);
  if (!loaded) return ReportError(loaded.error());
  if (Result<void> fits = CheckCasesFit(*plan, loaded->model); !fits) return ReportError(fits.error());

  BenchReport report;
  report.model_path = plan->model_path;
  report.model_parameters = loaded->model.parameter_count();
  report.repetitions = plan->repetitions;
  report.build = CurrentBuildFacts();
  FillMachineFacts(report);
  WarnAboutSharedCores(*plan, report.usable_cores);
  BenchRunner runner(loaded->model);
  const auto start = std::chrono::steady_clock::now();
  for (const BenchCase& bench_case : plan->cases) {
    Result<BenchRow> row = runner.Run(bench_case, plan->repetitions);
    if (!row) return ReportError(row.error());
    report.rows.push_back(std::move(*row));
    if (!plan->quiet) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      PrintProgress(report.rows.size(), plan->cases.size(), report.rows.back(), elapsed);
    }
  }
  std::string text;
  switch (plan->output) {
    case BenchOutput::kMarkdown: text = BenchMarkdown(report); break;
    case BenchOutput::kCsv: text = BenchCsv(report); break;
    case BenchOutput::kJson: text = BenchJson(report); break;
    case BenchOutput::kJsonLines: text = BenchJsonLines(report); break;
  }
  if (Result<void> written = WriteStdout(text); !written) return ReportError(written.error());
  return 0;
}

}  // namespace kvrt::cli
