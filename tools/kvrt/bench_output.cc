#include "bench_output.h"

#include <nlohmann/json.hpp>
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <thread>

#include "kvrt/machine/machine_limits.h"
#include "sample_statistics.h"

namespace kvrt::cli {
namespace {

using Json = nlohmann::ordered_json;

std::string Fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string Int8Text(const BenchCase& bench_case) { return bench_case.int8_activations ? "1" : "0"; }
std::string Bf16Text(const BenchCase& bench_case) { return bench_case.bf16_activations ? "1" : "0"; }
// The bf16-activation column appears only in reports that have such rows, so the
// tables of every other run keep their columns.
bool HasBf16Rows(const BenchReport& report) {
  for (const BenchRow& row : report.rows) {
    if (row.bench_case.bf16_activations) return true;
  }
  return false;
}
// The cache's element type: "f32" (the engine's own), "f16", "bf16" or "q8_0".
std::string KvText(const BenchCase& bench_case) {
  return bench_case.kv_type == KvType::kEngine ? "f32" : std::string(KvTypeName(bench_case.kv_type));
}

// Microseconds per token of every timed run: Google Benchmark's "time", smaller is faster.
std::vector<double> MicrosecondsPerToken(const BenchRow& row, const std::vector<double>& seconds) {
  std::vector<double> times;
  for (double run : seconds) times.push_back(1e6 * run / static_cast<double>(row.tokens));
  return times;
}

Json BuildFactsJson(const BenchReport& report) {
  return Json{{"version", report.build.version},     {"commit", report.build.commit},
              {"simd_target", report.build.simd_target}, {"threads", report.build.threads},
              {"allocator", report.build.allocator}};
}

// The row's own fields, shared by the JSON aggregates and the JSON lines.
void RowFields(const BenchRow& row, Json& json) {
  const BenchCase& c = row.bench_case;
  json["test"] = BenchTestName(c.test);
  json["n_prompt"] = c.test.prompt;
  json["n_gen"] = c.test.decode;
  json["depth"] = c.depth;
  json["sequences"] = c.sequences;
  json["engine_threads"] = c.threads;
  json["weights"] = std::string(WeightFormatName(c.weights));
  json["int8_activations"] = c.int8_activations;
  json["bf16_activations"] = c.bf16_activations;
  json["kv_type"] = KvText(c);
  json["tokens_per_second"] = row.MeanTokensPerSecond();
  json["tokens_per_second_stddev"] = row.StddevTokensPerSecond();
  json["samples_tokens_per_second"] = row.TokensPerSecond();
  json["read_bytes_per_second"] = row.read_bytes_per_second;
  json["fma_flops_per_second"] = row.fma_flops_per_second;
  if (c.int8_activations) json["int8_dot_ops_per_second"] = row.int8_dot_ops_per_second;
  if (c.bf16_activations) {
    json["bf16_dot_flops_per_second"] = row.bf16_dot_flops_per_second;
    // The unit the bf16 products ran on, whose peak that is.
    json["bf16_dot_unit"] = machine::Bf16DotUnit();
  }
  json["weight_bytes"] = row.weight_bytes;
  json["roofline_tokens_per_second"] = row.roofline_tokens_per_second;
  json["roofline_fraction"] = row.RooflineFraction();
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string FactsLine(const BenchReport& report) {
  std::string line = BuildFactsLine(report.build) + "; CPU " + report.cpu_model + ", " +
                     std::to_string(report.cores) + " cores";
  if (report.usable_cores < report.cores) line += " (" + std::to_string(report.usable_cores) + " usable by this process)";
  return line;
}

}  // namespace

void FillMachineFacts(BenchReport& report) {
  report.cpu_model = "unknown";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos && colon + 2 <= line.size()) report.cpu_model = line.substr(colon + 2);
    break;
  }
  report.cores = std::thread::hardware_concurrency();
  report.usable_cores = UsableCores();
}

size_t UsableCores() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) return std::thread::hardware_concurrency();
  return static_cast<size_t>(CPU_COUNT(&mask));
}

std::string BenchMarkdown(const BenchReport& report) {
  std::string text = FactsLine(report) + "\n\n";
  text += "model: " + report.model_path + " (" + std::to_string(report.model_parameters) + " parameters), " +
          std::to_string(report.repetitions) + " runs a row after a warm-up\n\n";
  const bool bf16 = HasBf16Rows(report);
  text += std::string("| weights | int8 | ") + (bf16 ? "bf16 | " : "") +
          "kv | threads | seqs | test | depth | t/s | samples t/s | read GB/s | FMA GFLOP/s | roofline t/s | fraction |\n"
          "| --- | ---: | " + (bf16 ? "---: | " : "") + "--- | ---: | ---: | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |\n";
  for (const BenchRow& row : report.rows) {
    const BenchCase& c = row.bench_case;
    std::string samples;
    for (double rate : row.TokensPerSecond()) samples += (samples.empty() ? "" : " ") + Fixed(rate, 1);
    text += "| " + std::string(WeightFormatName(c.weights)) + " | " + Int8Text(c) + " | " +
            (bf16 ? Bf16Text(c) + " | " : "") + KvText(c) + " | " +
            std::to_string(c.threads) + " | " + std::to_string(c.sequences) + " | " + BenchTestName(c.test) + " | " +
            std::to_string(c.depth) + " | " + Fixed(row.MeanTokensPerSecond(), 2) + " ± " +
            Fixed(row.StddevTokensPerSecond(), 2) + " | " + samples + " | " +
            Fixed(row.read_bytes_per_second / 1e9, 1) + " | " + Fixed(row.fma_flops_per_second / 1e9, 1) + " | " +
            Fixed(row.roofline_tokens_per_second, 1) + " | " + Fixed(row.RooflineFraction(), 3) + " |\n";
  }
  return text;
}

std::string BenchCsv(const BenchReport& report) {
  std::string text =
      "model,weights,int8_activations,kv_type,threads,sequences,test,depth,tokens_per_second,tokens_per_second_stddev,"
      "samples_tokens_per_second,read_bytes_per_second,fma_flops_per_second,roofline_tokens_per_second,"
      "roofline_fraction,kvrt_version,commit,simd_target,allocator,cpu_model,cores,usable_cores";
  const bool bf16 = HasBf16Rows(report);
  text += bf16 ? ",bf16_activations\n" : "\n";
  for (const BenchRow& row : report.rows) {
    const BenchCase& c = row.bench_case;
    std::string samples;
    for (double rate : row.TokensPerSecond()) samples += (samples.empty() ? "" : ";") + Fixed(rate, 3);
    text += CsvField(report.model_path) + "," + std::string(WeightFormatName(c.weights)) + "," + Int8Text(c) + "," +
            KvText(c) + "," + std::to_string(c.threads) + "," + std::to_string(c.sequences) + "," + BenchTestName(c.test) + "," +
            std::to_string(c.depth) + "," + Fixed(row.MeanTokensPerSecond(), 3) + "," +
            Fixed(row.StddevTokensPerSecond(), 3) + "," + samples + "," + Fixed(row.read_bytes_per_second, 0) + "," +
            Fixed(row.fma_flops_per_second, 0) + "," + Fixed(row.roofline_tokens_per_second, 3) + "," +
            Fixed(row.RooflineFraction(), 4) + "," + CsvField(report.build.version) + "," +
            CsvField(report.build.commit) + "," + CsvField(report.build.simd_target) + "," +
            CsvField(report.build.allocator) + "," + CsvField(report.cpu_model) + "," + std::to_string(report.cores) +
            "," + std::to_string(report.usable_cores) + (bf16 ? "," + Bf16Text(c) : "") + "\n";
  }
  return text;
}

std::string BenchJson(const BenchReport& report) {
  Json context = {{"executable", "kvrt bench"},
                  {"num_cpus", report.cores},
                  {"usable_cpus", report.usable_cores},
                  {"cpu_model", report.cpu_model},
                  {"simd_target", report.build.simd_target},
                  {"allocator", report.build.allocator},
                  {"library_build_type", "release"},
                  {"kvrt", BuildFactsJson(report)},
                  {"model", report.model_path},
                  {"model_parameters", report.model_parameters},
                  {"repetitions", report.repetitions}};
  Json benchmarks = Json::array();
  size_t family = 0;
  for (const BenchRow& row : report.rows) {
    const std::string name = BenchCaseName(row.bench_case);
    const std::vector<double> real = MicrosecondsPerToken(row, row.seconds);
    const std::vector<double> cpu = MicrosecondsPerToken(row, row.cpu_seconds);
    const std::vector<double> rates = row.TokensPerSecond();
    auto entry = [&](const std::string& entry_name, const char* run_type) {
      return Json{{"name", entry_name},
                  {"family_index", family},
                  {"per_family_instance_index", 0},
                  {"run_name", name},
                  {"run_type", run_type},
                  {"repetitions", real.size()},
                  {"threads", 1},  // Google Benchmark's own threads: one caller
                  {"iterations", row.tokens}};
    };
    for (size_t run = 0; run < real.size(); ++run) {
      Json sample = entry(name, "iteration");
      sample["repetition_index"] = run;
      sample["real_time"] = real[run];
      sample["cpu_time"] = cpu[run];
      sample["time_unit"] = "us";
      sample["tokens_per_second"] = rates[run];
      benchmarks.push_back(sample);
    }
    struct Aggregate {
      const char* name;
      double (*of)(const std::vector<double>&);
    };
    const Aggregate aggregates[] = {
        {"mean", [](const std::vector<double>& v) { return Mean(v); }},
        {"median", [](const std::vector<double>& v) { return Median(v); }},
        {"stddev", [](const std::vector<double>& v) { return SampleStddev(v); }},
        {"cv", [](const std::vector<double>& v) { return Mean(v) > 0 ? SampleStddev(v) / Mean(v) : 0.0; }},
    };
    for (const Aggregate& aggregate : aggregates) {
      Json summary = entry(name + "_" + aggregate.name, "aggregate");
      summary["aggregate_name"] = aggregate.name;
      summary["aggregate_unit"] = std::string(aggregate.name) == "cv" ? "percentage" : "time";
      summary["real_time"] = aggregate.of(real);
      summary["cpu_time"] = aggregate.of(cpu);
      summary["time_unit"] = "us";
      RowFields(row, summary);
      benchmarks.push_back(summary);
    }
    ++family;
  }
  return Json{{"context", context}, {"benchmarks", benchmarks}}.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string BenchJsonLines(const BenchReport& report) {
  std::string text;
  for (const BenchRow& row : report.rows) {
    Json line = {{"name", BenchCaseName(row.bench_case)}, {"model", report.model_path}, {"threads", row.bench_case.threads}};
    RowFields(row, line);
    line["kvrt"] = BuildFactsJson(report);
    line["cpu_model"] = report.cpu_model;
    line["cores"] = report.cores;
    line["usable_cores"] = report.usable_cores;
    text += line.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  }
  return text;
}

}  // namespace kvrt::cli
