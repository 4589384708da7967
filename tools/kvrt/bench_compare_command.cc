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
  if (unit == "ns") return value * 1e-9;
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
  std::map<std::string, Row> rows;
  std::map<std::string, bool> has_median;
  for (const Json& entry : run.at("benchmarks")) {
    const std::string name = entry.value("run_name", entry.value("name", std::string()));
    const std::string aggregate = entry.value("aggregate_name", std::string());
    const double seconds = ToSeconds(entry.value("real_time", 0.0), entry.value("time_unit", std::string("ns")));
    Row& row = rows[name];
    if (aggregate == "cv") {
      row.cv = entry.value("real_time", 0.0);
      continue;
    }
    // The median of the repetitions when there are some, else the single run.
    if (aggregate != "median" && (has_median[name] || !aggregate.empty())) continue;
    if (aggregate == "median") has_median[name] = true;
    row.time = seconds;
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
    return ReportError(Error(ErrorCode::kPerformanceRegression, {{"benchmarks", uint64_t(slower)}},
                             std::to_string(slower) + " benchmark(s) slower beyond noise"));
  }
  return 0;
}

// A ratio of GATE.json: either numerator/denominator of two rows' times (a
// speed-up when the numerator is the slower variant), or one row's counter.
Result<double> GateRatio(const Json& spec, const std::map<std::string, Row>& rows, double& cv) {
  auto find = [&](const std::string& name) -> Result<const Row*> {
    const auto it = rows.find(name);
    if (it == rows.end()) return std::unexpected(InvalidArgument("benchmark '" + name + "' is not in the run"));
    return &it->second;
  };
  if (spec.contains("counter")) {
    Result<const Row*> row = find(spec.at("benchmark"));
    if (!row) return std::unexpected(row.error());
    const auto counter = (*row)->counters.find(spec.at("counter"));
    if (counter == (*row)->counters.end()) {
      return std::unexpected(InvalidArgument("counter '" + spec.at("counter").get<std::string>() + "' missing"));
    }
    cv = (*row)->cv;
    return counter->second;
  }
  Result<const Row*> numerator = find(spec.at("numerator"));
  Result<const Row*> denominator = find(spec.at("denominator"));
  if (!numerator) return std::unexpected(numerator.error());
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
  int failed = 0;
  std::printf("%-48s %9s %9s %9s %9s\n", "ratio", "measured", "minimum", "baseline", "floor");
  for (const Json& spec : gate.at("ratios")) {
    double cv = 0;
    Result<double> ratio = GateRatio(spec, *current, cv);
    if (!ratio) return ReportError(ratio.error());
    const double minimum = spec.value("minimum", 0.0), recorded = spec.value("baseline", 0.0);
    const double floor = std::max(minimum, recorded * (1.0 - NoiseTolerance(threshold, cv, 0.0)));
    const bool bad = *ratio < floor;
    failed += bad;
    std::printf("%-48s %9.3f %9.3f %9.3f %9.3f%s\n", spec.at("name").get<std::string>().c_str(), *ratio, minimum,
                recorded, floor, bad ? "  FAIL" : "");
  }
  std::printf("absolute medians (reported only):\n");
  for (const auto& [name, row] : *current) std::printf("  %-60s %12.4g s\n", name.c_str(), row.time);
  if (failed > 0) {
    return ReportError(Error(ErrorCode::kPerformanceRegression, {{"ratios", uint64_t(failed)}},
                             std::to_string(failed) + " in-run ratio(s) below their floor"));
  }
  return 0;
}

}  // namespace

int RunBenchCompare(std::span<char* const> args) {
  Result<Flags> flags = Flags::Parse(args, kFlags);
  if (!flags) return ReportError(flags.error());
  if (flags->Has("help")) {
    std::printf("%s", Usage("kvrt bench-compare (BASELINE.json CURRENT.json | --gate GATE.json CURRENT.json...)", kFlags).c_str());
    return 0;
  }
  Result<double> threshold = flags->Double("threshold", 0.10);
  if (!threshold) return ReportError(threshold.error());
  const std::vector<std::string>& files = flags->positional();
  if (flags->Has("gate")) {
    if (files.empty()) return ReportError(InvalidArgument("--gate needs the CURRENT.json file(s) of one run"));
    return CheckGate(*flags->Value("gate"), files, *threshold);
  }
  if (files.size() != 2) return ReportError(InvalidArgument("give BASELINE.json and CURRENT.json"));
  return CompareRuns(files[0], files[1], *threshold);
}

}  // namespace kvrt::cli
