#include "benchmark_run.h"

#include <algorithm>
#include <set>

#include "flags.h"
#include "json_file.h"
#include "sample_statistics.h"

namespace kvrt::cli {
namespace {

using Json = nlohmann::json;

double ToSeconds(double value, const std::string& unit) {
  if (unit == "ns" || unit.empty()) return value * 1e-9;  // Google Benchmark's default unit
  if (unit == "us") return value * 1e-6;
  if (unit == "ms") return value * 1e-3;
  return value;
}

std::string TextField(const Json& entry, const char* key) {
  const auto it = entry.find(key);
  return it != entry.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Fields Google Benchmark writes for itself; every other number is a user counter.
bool IsBookkeeping(const std::string& key) {
  static const std::set<std::string> kKeys = {"real_time",        "cpu_time",    "iterations",
                                              "repetitions",      "repetition_index", "threads",
                                              "family_index",     "per_family_instance_index"};
  return kKeys.count(key) != 0;
}

}  // namespace

Result<BenchmarkRun> ReadBenchmarkRun(const std::string& path) {
  Result<Json> run = ReadJsonFile(path, "benchmark results");
  if (!run) return std::unexpected(run.error());
  if (!run->is_object() || !run->contains("benchmarks")) {
    return std::unexpected(InvalidArgument(path + " is not Google Benchmark JSON output"));
  }
  const Json& entries = run->at("benchmarks");
  if (!entries.is_array()) return std::unexpected(InvalidArgument(path + ": \"benchmarks\" is not a list"));
  BenchmarkRun rows;
  std::set<std::string> has_median;
  for (const Json& entry : entries) {
    if (!entry.is_object()) continue;
    const auto real_time = entry.find("real_time");
    if (real_time == entry.end() || !real_time->is_number()) continue;
    std::string name = TextField(entry, "run_name");
    if (name.empty()) name = TextField(entry, "name");
    if (name.empty()) continue;
    const std::string aggregate = TextField(entry, "aggregate_name");
    BenchmarkRow& row = rows[name];
    if (aggregate == "cv") {
      row.cv = real_time->get<double>();
      continue;
    }
    if (aggregate.empty()) row.samples.push_back(ToSeconds(real_time->get<double>(), TextField(entry, "time_unit")));
    // The median of the repetitions when there are some, else the single run.
    if (aggregate != "median" && (has_median.count(name) || !aggregate.empty())) continue;
    if (aggregate == "median") has_median.insert(name);
    row.seconds = ToSeconds(real_time->get<double>(), TextField(entry, "time_unit"));
    row.counters.clear();
    for (const auto& [key, value] : entry.items()) {
      if (value.is_number() && !IsBookkeeping(key)) row.counters[key] = value.get<double>();
    }
  }
  // Several runs of a row and no median aggregate (iteration rows of separate runs
  // merged into one file, as docs/perf_gate.md shows): the median of those runs,
  // not whichever came last.
  for (auto& [name, row] : rows) {
    if (has_median.count(name) || row.samples.size() < 2) continue;
    row.seconds = Median(row.samples);
  }
  std::erase_if(rows, [](const auto& named) { return !(named.second.seconds > 0); });
  if (rows.empty()) return std::unexpected(InvalidArgument(path + " holds no benchmark with a positive time"));
  return rows;
}

Result<std::string> ReadBenchmarkSimdTarget(const std::string& path) {
  Result<Json> run = ReadJsonFile(path, "benchmark results");
  if (!run) return std::unexpected(run.error());
  if (!run->is_object()) return std::unexpected(InvalidArgument(path + " is not Google Benchmark JSON output"));
  const auto context = run->find("context");
  if (context == run->end() || !context->is_object()) return std::string();
  return TextField(*context, "simd_target");
}

}  // namespace kvrt::cli
