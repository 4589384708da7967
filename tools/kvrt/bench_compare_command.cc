// kvrt bench-compare: the performance regression gate over Google Benchmark JSON.
//
//   kvrt bench-compare BASELINE.json CURRENT.json [--threshold F] [--alpha A]
//                      [--max-noise N] [--allow-missing] [--allow-new]
//     Per benchmark: the ratio of CURRENT's median time to BASELINE's, and a
//     two-sided Mann–Whitney U test on the two runs' repetitions (mann_whitney.h).
//     When the repetitions are enough for the test to reach A (default 0.05; 4
//     against 4 are, 3 against 3 are not), a slowdown fails when the ratio exceeds
//     1 + F AND the test finds the two runs different (p < A): a noisy neighbour
//     that slowed one repetition does not fail a run that did not regress, and a
//     10 % regression with tight samples does. With fewer repetitions the ratio
//     is judged by the noise rule instead: it fails beyond 1 + max(F, min(3 × the
//     combined coefficient of variation of the two runs' repetitions, N)). Both
//     runs must hold the same benchmarks: one missing from CURRENT or new in it is
//     an input error unless allowed, and two runs with nothing in common never pass.
//     Both Google Benchmark JSON and `kvrt bench -o json` are read.
//   kvrt bench-compare --gate GATE.json CURRENT.json...
//     Ratios measured within CURRENT alone (one run, possibly several binaries:
//     fast vs scalar twin, replay vs cached, one thread vs two), each checked
//     against its committed minimum and against the baseline value recorded in
//     GATE.json with the same noise-aware rule. Those survive a noisy, shared
//     machine; absolute times are only reported.
//
// Exit status: 0 pass, 1 regression (kRegressionStatus), 2 usage or input error.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "benchmark_run.h"
#include "commands.h"
#include "common.h"
#include "json_file.h"
#include "mann_whitney.h"
#include "output.h"

namespace kvrt::cli {
namespace {

using Json = nlohmann::json;

constexpr FlagSpec kFlags[] = {
    {"gate", true, "ratio gate file (JSON); compare ratios within CURRENT instead of two runs"},
    {"threshold", true, "smallest slowdown that fails, as a fraction (default 0.10)"},
    {"alpha", true, "two runs: significance level of the Mann-Whitney U test on the repetitions (default 0.05)"},
    {"max-noise", true, "cap on the noise allowance 3 x cv, as a fraction (default 0.25)"},
    {"allow-missing", false, "a benchmark of BASELINE absent from CURRENT is reported, not an error"},
    {"allow-new", false, "a benchmark of CURRENT absent from BASELINE is reported, not an error"},
    {"help", false, "show this help"},
};

// How far a time may rise (or a ratio drop) before it counts as real: the
// threshold, widened by three standard deviations of the noise the runs report,
// but by no more than `max_noise`.
struct NoiseRule {
  double threshold = 0.10;
  double max_noise = 0.25;
  double Tolerance(double threshold_for_this, double cv) const {
    return std::max(threshold_for_this, std::min(3.0 * cv, max_noise));
  }
};

double CombinedCv(double cv_a, double cv_b) { return std::sqrt(cv_a * cv_a + cv_b * cv_b); }

std::string JoinNames(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

struct CompareOptions {
  NoiseRule noise;
  double alpha = 0.05;
  bool allow_missing = false;
  bool allow_new = false;
};

int CompareRuns(const std::string& baseline_path, const std::string& current_path, const CompareOptions& options) {
  Result<BenchmarkRun> baseline = ReadBenchmarkRun(baseline_path);
  if (!baseline) return ReportError(baseline.error());
  Result<BenchmarkRun> current = ReadBenchmarkRun(current_path);
  if (!current) return ReportError(current.error());
  std::vector<std::string> missing, added;
  for (const auto& [name, row] : *baseline) {
    if (!current->count(name)) missing.push_back(name);
  }
  int slower = 0, compared = 0;
  PrintStdout("%-60s %12s %12s %8s %8s %10s\n", "benchmark", "baseline", "current", "ratio", "allowed", "U test p");
  for (const auto& [name, now] : *current) {
    const auto before = baseline->find(name);
    if (before == baseline->end()) {
      added.push_back(name);
      continue;
    }
    const double ratio = now.seconds / before->second.seconds;
    // The U test decides when the repetitions can reach the significance level;
    // otherwise the noise rule's wider allowance stands in for it.
    const bool testable = SmallestTwoSidedP(before->second.samples.size(), now.samples.size()) < options.alpha;
    bool regression = false;
    double allowed = 0;
    std::string p_text = "-";
    if (testable) {
      const std::optional<MannWhitney> test = MannWhitneyTest(before->second.samples, now.samples);
      allowed = 1.0 + options.noise.threshold;
      regression = ratio > allowed && test->p_value < options.alpha;
      char text[32];
      std::snprintf(text, sizeof text, "%.4f", test->p_value);
      p_text = text;
    } else {
      allowed = 1.0 + options.noise.Tolerance(options.noise.threshold, CombinedCv(before->second.cv, now.cv));
      regression = ratio > allowed;
    }
    slower += regression;
    ++compared;
    PrintStdout("%-60s %12.4g %12.4g %8.3f %8.3f %10s%s\n", name.c_str(), before->second.seconds, now.seconds, ratio,
                allowed, p_text.c_str(), regression ? "  SLOWER" : "");
  }
  for (const std::string& name : missing) PrintStdout("%-60s missing from CURRENT\n", name.c_str());
  for (const std::string& name : added) PrintStdout("%-60s new in CURRENT\n", name.c_str());
  // An incomplete comparison is an input error, not a pass: a renamed or dropped
  // benchmark would otherwise leave the gate silently checking nothing.
  if (compared == 0) return ReportError(InvalidArgument("the two runs share no benchmark"));
  if (!missing.empty() && !options.allow_missing) {
    return ReportError(InvalidArgument(std::to_string(missing.size()) + " benchmark(s) missing from " +
                                       current_path + " (--allow-missing to accept): " + JoinNames(missing)));
  }
  if (!added.empty() && !options.allow_new) {
    return ReportError(InvalidArgument(std::to_string(added.size()) + " benchmark(s) new in " + current_path +
                                       " (--allow-new to accept): " + JoinNames(added)));
  }
  if (slower > 0) return ReportRegression(std::to_string(slower) + " benchmark(s) slower beyond noise");
  return 0;
}

// A ratio's floor: `minimum` is the committed floor; `baseline` the value a quiet
// machine measured, allowed to drop by the noise tolerance (`tolerance` overrides
// --threshold for ratios that a shared machine moves more, like thread scaling).
struct GateFloor {
  double minimum = 0, baseline = 0;
  std::optional<double> tolerance;
};

// One entry of GATE.json's "ratios": either numerator/denominator of two rows'
// times (a speed-up when the numerator is the slower variant) or one row's counter,
// and its floor. `targets` may give another floor for runs dispatched to one
// Highway target ("targets": {"AVX2": {"minimum": 4}}): a ratio like fast/twin
// scales with the vector width, so AVX2's 8 lanes cannot promise AVX3's 16. Each
// field given there replaces the entry's own; the others stay.
struct GateRatioSpec {
  std::string name;
  std::string numerator, denominator;  // time ratio
  std::string benchmark, counter;      // or a counter
  // Optional: divide by another row's counter, e.g. the FMA probe's own 2-thread
  // speed-up, so a thread-scaling ratio judges the code and not a busy machine.
  std::string per_benchmark, per_counter;
  GateFloor floor;
  std::map<std::string, Json> targets;  // target name → its floor's fields
};

// The floor of `spec` for a run on `target` (empty: the run did not say).
Result<GateFloor> FloorFor(const GateRatioSpec& spec, const std::string& target) {
  GateFloor floor = spec.floor;
  const auto it = spec.targets.find(target);
  if (target.empty() || it == spec.targets.end()) return floor;
  for (const auto& [key, value] : it->second.items()) {
    if (!value.is_number() || (key != "minimum" && key != "baseline" && key != "tolerance")) {
      return std::unexpected(InvalidArgument("gate ratio '" + spec.name + "', target " + target +
                                             ": only numeric minimum, baseline and tolerance may be given"));
    }
    const double number = value.get<double>();
    if (key == "minimum") floor.minimum = number;
    if (key == "baseline") floor.baseline = number;
    if (key == "tolerance") floor.tolerance = number;
  }
  if (floor.minimum <= 0 && floor.baseline <= 0) {
    return std::unexpected(InvalidArgument("gate ratio '" + spec.name + "', target " + target +
                                           ": needs a minimum or a baseline"));
  }
  return floor;
}

Result<GateRatioSpec> ParseGateRatio(const Json& entry) {
  if (!entry.is_object()) return std::unexpected(InvalidArgument("a gate ratio must be a JSON object"));
  GateRatioSpec spec;
  auto text = [&](const char* key, std::string& out) {
    const auto it = entry.find(key);
    if (it != entry.end() && it->is_string()) out = it->get<std::string>();
  };
  auto number = [&](const char* key) -> std::optional<double> {
    const auto it = entry.find(key);
    if (it == entry.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  text("name", spec.name);
  text("numerator", spec.numerator);
  text("denominator", spec.denominator);
  text("benchmark", spec.benchmark);
  text("counter", spec.counter);
  text("per_benchmark", spec.per_benchmark);
  text("per_counter", spec.per_counter);
  spec.floor.minimum = number("minimum").value_or(0.0);
  spec.floor.baseline = number("baseline").value_or(0.0);
  spec.floor.tolerance = number("tolerance");
  if (const auto targets = entry.find("targets"); targets != entry.end()) {
    if (!targets->is_object()) {
      return std::unexpected(InvalidArgument("gate ratio '" + spec.name + "': \"targets\" must map target names to floors"));
    }
    for (const auto& [target, fields] : targets->items()) {
      if (!fields.is_object()) {
        return std::unexpected(InvalidArgument("gate ratio '" + spec.name + "', target " + target +
                                               ": the floor must be an object"));
      }
      spec.targets[target] = fields;
      // Checked now, so that a malformed override fails on every machine, not only
      // on the one whose target it names.
      if (Result<GateFloor> checked = FloorFor(spec, target); !checked) return std::unexpected(checked.error());
    }
  }
  const bool is_time_ratio = !spec.numerator.empty() && !spec.denominator.empty();
  const bool is_counter = !spec.benchmark.empty() && !spec.counter.empty();
  if (spec.name.empty() || is_time_ratio == is_counter) {
    return std::unexpected(InvalidArgument(
        "a gate ratio needs a name and either numerator+denominator or benchmark+counter: " + entry.dump()));
  }
  if (spec.per_benchmark.empty() != spec.per_counter.empty()) {
    return std::unexpected(InvalidArgument("gate ratio '" + spec.name + "' needs both per_benchmark and per_counter"));
  }
  if (spec.floor.minimum <= 0 && spec.floor.baseline <= 0) {
    return std::unexpected(InvalidArgument("gate ratio '" + spec.name + "' needs a minimum or a baseline"));
  }
  return spec;
}

Result<double> CounterOf(const BenchmarkRun& rows, const std::string& benchmark, const std::string& counter,
                         double& cv) {
  const auto row = rows.find(benchmark);
  if (row == rows.end()) return std::unexpected(InvalidArgument("benchmark '" + benchmark + "' is not in the run"));
  const auto value = row->second.counters.find(counter);
  if (value == row->second.counters.end()) {
    return std::unexpected(InvalidArgument("counter '" + counter + "' missing from " + benchmark));
  }
  cv = row->second.cv;
  return value->second;
}

Result<double> MeasureRawRatio(const GateRatioSpec& spec, const BenchmarkRun& rows, double& cv) {
  auto find = [&](const std::string& name) -> Result<const BenchmarkRow*> {
    const auto it = rows.find(name);
    if (it == rows.end()) return std::unexpected(InvalidArgument("benchmark '" + name + "' is not in the run"));
    return &it->second;
  };
  if (!spec.counter.empty()) return CounterOf(rows, spec.benchmark, spec.counter, cv);
  Result<const BenchmarkRow*> numerator = find(spec.numerator);
  if (!numerator) return std::unexpected(numerator.error());
  Result<const BenchmarkRow*> denominator = find(spec.denominator);
  if (!denominator) return std::unexpected(denominator.error());
  cv = CombinedCv((*numerator)->cv, (*denominator)->cv);
  return (*numerator)->seconds / (*denominator)->seconds;
}

Result<double> MeasureRatio(const GateRatioSpec& spec, const BenchmarkRun& rows, double& cv) {
  Result<double> ratio = MeasureRawRatio(spec, rows, cv);
  if (!ratio || spec.per_benchmark.empty()) return ratio;
  double per_cv = 0;
  Result<double> per = CounterOf(rows, spec.per_benchmark, spec.per_counter, per_cv);
  if (!per) return std::unexpected(per.error());
  if (!(*per > 0)) return std::unexpected(InvalidArgument("counter '" + spec.per_counter + "' is not positive"));
  cv = CombinedCv(cv, per_cv);
  return *ratio / *per;
}

int CheckGate(const std::string& gate_path, const std::vector<std::string>& current_paths, const NoiseRule& noise) {
  Result<Json> gate = ReadJsonFile(gate_path, "gate file");
  if (!gate) return ReportError(gate.error());
  if (!gate->is_object() || !gate->contains("ratios")) {
    return ReportError(InvalidArgument(gate_path + " is not a ratio gate file"));
  }
  // One run may be split over several binaries' JSON files.
  BenchmarkRun current;
  std::string target;  // the SIMD target every file of the run names, if any
  for (const std::string& path : current_paths) {
    Result<BenchmarkRun> part = ReadBenchmarkRun(path);
    if (!part) return ReportError(part.error());
    current.merge(*part);
    Result<std::string> part_target = ReadBenchmarkSimdTarget(path);
    if (!part_target) return ReportError(part_target.error());
    if (!part_target->empty() && !target.empty() && *part_target != target) {
      return ReportError(InvalidArgument("the run's files name different SIMD targets: " + target + " and " +
                                         *part_target + " (" + path + ")"));
    }
    if (!part_target->empty()) target = *part_target;
  }
  const Json& entries = gate->at("ratios");
  if (!entries.is_array() || entries.empty()) return ReportError(InvalidArgument(gate_path + " lists no ratios"));
  int failed = 0;
  PrintStdout("SIMD target: %s\n", target.empty() ? "not recorded" : target.c_str());
  PrintStdout("%-48s %9s %9s %9s %9s\n", "ratio", "measured", "minimum", "baseline", "floor");
  for (const Json& entry : entries) {
    Result<GateRatioSpec> spec = ParseGateRatio(entry);
    if (!spec) return ReportError(spec.error());
    double cv = 0;
    Result<double> ratio = MeasureRatio(*spec, current, cv);
    if (!ratio) return ReportError(ratio.error());
    Result<GateFloor> limits = FloorFor(*spec, target);
    if (!limits) return ReportError(limits.error());
    const double tolerance = noise.Tolerance(limits->tolerance.value_or(noise.threshold), cv);
    const double floor = std::max(limits->minimum, limits->baseline * (1.0 - tolerance));
    const bool bad = !(*ratio >= floor);
    failed += bad;
    // The target's own floor is marked, so a reader knows which numbers applied.
    const std::string note = spec->targets.count(target) != 0 ? "  (" + target + " floor)" : "";
    PrintStdout("%-48s %9.3f %9.3f %9.3f %9.3f%s%s\n", spec->name.c_str(), *ratio, limits->minimum,
                limits->baseline, floor, note.c_str(), bad ? "  FAIL" : "");
  }
  PrintStdout("absolute medians (reported only):\n");
  for (const auto& [name, row] : current) PrintStdout("  %-60s %12.4g s\n", name.c_str(), row.seconds);
  if (failed > 0) return ReportRegression(std::to_string(failed) + " in-run ratio(s) below their floor");
  return 0;
}

}  // namespace

int RunBenchCompare(std::span<char* const> args) {
  Result<Flags> flags = Flags::Parse(args, kFlags, /*max_positional=*/SIZE_MAX);
  if (!flags) return ReportError(flags.error());
  if (flags->Has("help")) {
    PrintStdout("%s", Usage("kvrt bench-compare (BASELINE.json CURRENT.json | --gate GATE.json CURRENT.json...)",
                            kFlags)
                          .c_str());
    return 0;
  }
  Result<double> threshold = flags->Double("threshold", 0.10);
  if (!threshold) return ReportError(threshold.error());
  if (!(*threshold >= 0 && *threshold < 1)) return ReportError(InvalidArgument("--threshold must be in [0, 1)"));
  Result<double> max_noise = flags->Double("max-noise", 0.25);
  if (!max_noise) return ReportError(max_noise.error());
  if (!(*max_noise >= 0 && *max_noise < 1)) return ReportError(InvalidArgument("--max-noise must be in [0, 1)"));
  const NoiseRule noise{*threshold, *max_noise};
  Result<double> alpha = flags->Double("alpha", 0.05);
  if (!alpha) return ReportError(alpha.error());
  if (!(*alpha > 0 && *alpha < 1)) return ReportError(InvalidArgument("--alpha must be in (0, 1)"));
  const std::vector<std::string>& files = flags->positional();
  if (flags->Has("gate")) {
    if (flags->Has("allow-missing") || flags->Has("allow-new") || flags->Has("alpha")) {
      return ReportError(InvalidArgument("--allow-missing, --allow-new and --alpha compare two runs, not a --gate"));
    }
    if (files.empty()) return ReportError(InvalidArgument("--gate needs the CURRENT.json file(s) of one run"));
    return CheckGate(*flags->Value("gate"), files, noise);
  }
  if (files.size() != 2) return ReportError(InvalidArgument("give BASELINE.json and CURRENT.json"));
  return CompareRuns(files[0], files[1],
                     CompareOptions{noise, *alpha, flags->Has("allow-missing"), flags->Has("allow-new")});
}

}  // namespace kvrt::cli
