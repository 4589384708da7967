// kvrt bench-compare: the performance regression gate over Google Benchmark JSON.
//
//   kvrt bench-compare BASELINE.json CURRENT.json [--threshold F]
//     Per benchmark: the ratio of CURRENT's median time to BASELINE's. A slowdown
//     fails when it exceeds max(F, 3 × the combined coefficient of variation of
//     the two runs' repetitions) — a noise-aware threshold.
//   kvrt bench-compare --gate GATE.json CURRENT.json...
//     Ratios measured within CURRENT alone (one run, possibly several binaries) (fast vs scalar twin, replay vs cached,
//     one thread vs two), each checked against its committed minimum and against
//     the baseline value recorded in GATE.json with the same noise-aware rule.
//     Those survive a noisy, shared machine; absolute times are only reported.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "commands.h"
#include "common.h"

namespace kvrt::cli {
namespace {

using Json = nlohmann::json;

constexpr FlagSpec kFlags[] = {
    {"gate", true, "ratio gate file (JSON); compare ratios within CURRENT instead of two runs"},
    {"threshold", true, "smallest slowdown that fails, as a fraction (default 0.10)"},
    {"help", false, "show this help"},
};

// One benchmark's statistics: median time and, with repetitions, the coefficient
// of variation; every counter of the median row.
struct Row {
  double time = 0;
  double cv = 0;
  std::map<std::string, double> counters;
};

double ToSeconds(double value, const std::string& unit) {
  if (unit == "ns" || unit.empty()) return value * 1e-9;  // Google Benchmark's default unit
  if (unit == "us") return value * 1e-6;
  if (unit == "ms") return value * 1e-3;
  return value;
}

Result<std::map<std::string, Row>> ReadRun(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return std::unexpected(Error(ErrorCode::kIo, {{"operation", std::string("read")}},
                                 "could not read benchmark results " + path));
  }
  const Json run = Json::parse(in, nullptr, false);
  if (run.is_discarded() || !run.contains("benchmarks")) {
    return std::unexpected(InvalidArgument(path + " is not Google Benchmark JSON output"));
  }
  const Json& entries = run.at("benchmarks");
  if (!entries.is_array()) return std::unexpected(InvalidArgument(path + ": \"benchmarks\" is not a list"));
  auto text = [](const Json& entry, const char* key) {
    const auto it = entry.find(key);
    return it != entry.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::map<std::string, Row> rows;
  std::map<std::string, bool> has_median;
  for (const Json& entry : entries) {
    if (!entry.is_object()) continue;
    const auto real_time = entry.find("real_time");
    if (real_time == entry.end() || !real_time->is_number()) continue;
    std::string name = text(entry, "run_name");
    if (name.empty()) name = text(entry, "name");
    const std::string aggregate = text(entry, "aggregate_name");
    Row& row = rows[name];
    if (aggregate == "cv") {
      row.cv = real_time->get<double>();
      continue;
    }
    // The median of the repetitions when there are some, else the single run.
    if (aggregate != "median" && (has_median[name] || !aggregate.empty())) continue;
    if (aggregate == "median") has_median[name] = true;
    row.time = ToSeconds(real_time->get<double>(), text(entry, "time_unit"));
    row.counters.clear();
    for (const auto& [key, value] : entry.items()) {
      if (value.is_number() && key != "real_time" && key != "cpu_time" && key != "iterations" &&
          key != "repetitions" && key != "repetition_index" && key != "threads" && key != "family_index" &&
          key != "per_family_instance_index") {
        row.counters[key] = value.get<double>();
      }
    }
  }
  return rows;
}

// Allowed relative drop of a ratio or rise of a time before it counts as real.
double NoiseTolerance(double threshold, double cv_a, double cv_b) {
  return std::max(threshold, 3.0 * std::sqrt(cv_a * cv_a + cv_b * cv_b));
}

int CompareRuns(const std::string& baseline_path, const std::string& current_path, double threshold) {
  Result<std::map<std::string, Row>> baseline = ReadRun(baseline_path);
  if (!baseline) return ReportError(baseline.error());
  Result<std::map<std::string, Row>> current = ReadRun(current_path);
  if (!current) return ReportError(current.error());
  int slower = 0;
  std::printf("%-60s %12s %12s %8s %8s\n", "benchmark", "baseline", "current", "ratio", "allowed");
  for (const auto& [name, now] : *current) {
    const auto before = baseline->find(name);
    if (before == baseline->end() || before->second.time <= 0 || now.time <= 0) continue;
    const double ratio = now.time / before->second.time;
    const double allowed = 1.0 + NoiseTolerance(threshold, before->second.cv, now.cv);
    const bool regression = ratio > allowed;
    slower += regression;
    std::printf("%-60s %12.4g %12.4g %8.3f %8.3f%s\n", name.c_str(), before->second.time, now.time, ratio,
                allowed, regression ? "  SLOWER" : "");
  }
  if (slower > 0) {
    return ReportRegression(std::to_string(slower) + " benchmark(s) slower beyond noise");
  }
  return 0;
}

// One entry of GATE.json's "ratios": either numerator/denominator of two rows'
// times (a speed-up when the numerator is the slower variant) or one row's counter.
// `minimum` is the committed floor; `baseline` the value a quiet machine measured,
// allowed to drop by the noise tolerance (`tolerance` overrides --threshold for
// ratios that a shared machine moves more, like thread scaling).
struct GateRatioSpec {
  std::string name;
  std::string numerator, denominator;  // time ratio
  std::string benchmark, counter;      // or a counter
  double minimum = 0, baseline = 0;
  std::optional<double> tolerance;
};

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
  spec.minimum = number("minimum").value_or(0.0);
  spec.baseline = number("baseline").value_or(0.0);
  spec.tolerance = number("tolerance");
  const bool is_time_ratio = !spec.numerator.empty() && !spec.denominator.empty();
  const bool is_counter = !spec.benchmark.empty() && !spec.counter.empty();
  if (spec.name.empty() || is_time_ratio == is_counter) {
    return std::unexpected(InvalidArgument(
        "a gate ratio needs a name and either numerator+denominator or benchmark+counter: " + entry.dump()));
  }
  if (spec.minimum <= 0 && spec.baseline <= 0) {
    return std::unexpected(InvalidArgument("gate ratio '" + spec.name + "' needs a minimum or a baseline"));
  }
  return spec;
}

Result<double> MeasureRatio(const GateRatioSpec& spec, const std::map<std::string, Row>& rows, double& cv) {
  auto find = [&](const std::string& name) -> Result<const Row*> {
    const auto it = rows.find(name);
    if (it == rows.end() || it->second.time <= 0) {
      return std::unexpected(InvalidArgument("benchmark '" + name + "' is not in the run"));
    }
    return &it->second;
  };
  if (!spec.counter.empty()) {
    Result<const Row*> row = find(spec.benchmark);
    if (!row) return std::unexpected(row.error());
    const auto counter = (*row)->counters.find(spec.counter);
    if (counter == (*row)->counters.end()) {
      return std::unexpected(InvalidArgument("counter '" + spec.counter + "' missing from " + spec.benchmark));
    }
    cv = (*row)->cv;
    return counter->second;
  }
  Result<const Row*> numerator = find(spec.numerator);
  if (!numerator) return std::unexpected(numerator.error());
  Result<const Row*> denominator = find(spec.denominator);
  if (!denominator) return std::unexpected(denominator.error());
  cv = std::sqrt((*numerator)->cv * (*numerator)->cv + (*denominator)->cv * (*denominator)->cv);
  return (*numerator)->time / (*denominator)->time;
}

int CheckGate(const std::string& gate_path, const std::vector<std::string>& current_paths, double threshold) {
  std::ifstream in(gate_path);
  const Json gate = Json::parse(in, nullptr, false);
  if (!in || gate.is_discarded() || !gate.contains("ratios")) {
    return ReportError(InvalidArgument(gate_path + " is not a ratio gate file"));
  }
  // One run may be split over several binaries' JSON files.
  Result<std::map<std::string, Row>> current = std::map<std::string, Row>{};
  for (const std::string& path : current_paths) {
    Result<std::map<std::string, Row>> part = ReadRun(path);
    if (!part) return ReportError(part.error());
    current->merge(*part);
  }
  const Json& entries = gate.at("ratios");
  if (!entries.is_array() || entries.empty()) return ReportError(InvalidArgument(gate_path + " lists no ratios"));
  int failed = 0;
  std::printf("%-48s %9s %9s %9s %9s\n", "ratio", "measured", "minimum", "baseline", "floor");
  for (const Json& entry : entries) {
    Result<GateRatioSpec> spec = ParseGateRatio(entry);
    if (!spec) return ReportError(spec.error());
    double cv = 0;
    Result<double> ratio = MeasureRatio(*spec, *current, cv);
    if (!ratio) return ReportError(ratio.error());
    const double tolerance = NoiseTolerance(spec->tolerance.value_or(threshold), cv, 0.0);
    const double floor = std::max(spec->minimum, spec->baseline * (1.0 - tolerance));
    const bool bad = !(*ratio >= floor);
    failed += bad;
    std::printf("%-48s %9.3f %9.3f %9.3f %9.3f%s\n", spec->name.c_str(), *ratio, spec->minimum, spec->baseline,
                floor, bad ? "  FAIL" : "");
  }
  std::printf("absolute medians (reported only):\n");
  for (const auto& [name, row] : *current) std::printf("  %-60s %12.4g s\n", name.c_str(), row.time);
  if (failed > 0) {
    return ReportRegression(std::to_string(failed) + " in-run ratio(s) below their floor");
  }
  return 0;
}

}  // namespace

int RunBenchCompare(std::span<char* const> args) {
  Result<Flags> flags = Flags::Parse(args, kFlags, /*max_positional=*/SIZE_MAX);
  if (!flags) return ReportError(flags.error());
  if (flags->Has("help")) {
    std::printf("%s", Usage("kvrt bench-compare (BASELINE.json CURRENT.json | --gate GATE.json CURRENT.json...)", kFlags).c_str());
    return 0;
  }
  Result<double> threshold = flags->Double("threshold", 0.10);
  if (!threshold) return ReportError(threshold.error());
  if (!(*threshold >= 0 && *threshold < 1)) return ReportError(InvalidArgument("--threshold must be in [0, 1)"));
  const std::vector<std::string>& files = flags->positional();
  if (flags->Has("gate")) {
    if (files.empty()) return ReportError(InvalidArgument("--gate needs the CURRENT.json file(s) of one run"));
    return CheckGate(*flags->Value("gate"), files, *threshold);
  }
  if (files.size() != 2) return ReportError(InvalidArgument("give BASELINE.json and CURRENT.json"));
  return CompareRuns(files[0], files[1], *threshold);
}

}  // namespace kvrt::cli
