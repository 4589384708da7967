// kvrt bench: its flags (llama-bench's spellings) and their one-line errors, and a
// tiny run on the q8_0 GGUF fixture in every output format, each parsed and
// checked for its documented fields. No timing is asserted: the numbers only have
// to be there, positive and consistent with each other.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sched.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"

namespace kvrt {
namespace {

using Json = nlohmann::json;
using testing::CliRun;
using testing::RunKvrt;

std::string TinyModel() { return testing::FixturePath("gguf/tiny-q8_0.gguf"); }

// A short sweep: 2 tests × 2 depths × 2 sequence counts, one thread, 2 runs a row.
std::vector<std::string> TinyBench(const std::string& output) {
  return {"bench", "-m", TinyModel(), "-p", "8", "-n", "0", "-pg", "4,2", "-d", "0,8", "--sequences", "1,2",
          "-t", "1", "-r", "2", "-o", output};
}

void ExpectOneLineError(const CliRun& run, const std::string& fragment) {
  EXPECT_EQ(run.status, 2) << run.out;
  EXPECT_TRUE(run.out.empty()) << run.out;
  EXPECT_EQ(run.err.rfind("error: InvalidArgument: ", 0), 0u) << run.err;
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << run.err;
  EXPECT_NE(run.err.find(fragment), std::string::npos) << run.err;
}

TEST(BenchCliTest, BadFlagsAreOneLineErrorsBeforeTheModelLoads) {
  const std::string model = TinyModel();
  ExpectOneLineError(RunKvrt({"bench"}), "--model");
  ExpectOneLineError(RunKvrt({"bench", "-m", model, "-p", "12x"}), "--n-prompt");
  ExpectOneLineError(RunKvrt({"bench", "-m", model, "-p", "8,"}), "--n-prompt");
  ExpectOneLineError(RunKvrt({"bench", "-m", model, "-t", "0"}), "--threads");
  ExpectOneLineError(RunKvrt({"bench", "-m", model, "-t", "1,1"}), "twice");
  ExpectOneLineError(RunKvrt({"bench", "-m", model, "--sequences", "0"}), "--sequences");
  ExpectOneLineError(RunKvrt({"bench", "-m", model, "--weights", "iq2_xs"}), "--weights");
  ExpectOneLineError(RunKvrt({"bench", "-m", model, "--int8-activations", "2"}), "--int8-activations");
  ExpectOneLineError(RunKvrt({"bench", "-m", model, "--bf16-activations", "2"}), "--bf16-activations");
  ExpectOneLineError(RunKvrt({"bench", "-m", model, "-r", "0"}), "--repetitions");
  ExpectOneLineError(RunKvrt({"bench", "-m", model, "-o", "xml"}), "--output");
  ExpectOneLineError(RunKvrt({"bench", "-m", model, "-pg", "512"}), "-pg");
  ExpectOneLineError(RunKvrt({"bench", "-m", model, "-p", "0", "-n", "0"}), "no test");
  ExpectOneLineError(RunKvrt({"bench", "-m", model, "--kv-type", "q4_0"}), "--kv-type");
  ExpectOneLineError(RunKvrt({"bench", "-m", model, "--kv-type", "f16,f16"}), "twice");
  ExpectOneLineError(RunKvrt({"bench", "-m", model, "--frobnicate"}), "unknown flag");
  // The model's context bounds the depth, checked before any row runs.
  ExpectOneLineError(RunKvrt({"bench", "-m", model, "-p", "8", "-n", "0", "-d", "1000000"}), "positions");
}

TEST(BenchCliTest, AMissingModelIsATypedError) {
  const CliRun run = RunKvrt({"bench", "-m", "/nonexistent/model.gguf", "-p", "8", "-n", "0"});
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err.rfind("error: ", 0), 0u) << run.err;
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << run.err;
}

TEST(BenchCliTest, HelpNamesTheFlags) {
  const CliRun run = RunKvrt({"bench", "--help"});
  EXPECT_EQ(run.status, 0);
  for (const char* flag : {"-p, --n-prompt", "-n, --n-gen", "-pg, --n-pg", "-d, --n-depth", "--sequences",
                           "-t, --threads", "--weights", "--int8-activations", "--bf16-activations", "-r, --repetitions",
                           "-o, --output", "-q, --quiet", "--kv-type"}) {
    EXPECT_NE(run.out.find(flag), std::string::npos) << flag << "\n" << run.out;
  }
  EXPECT_NE(run.out.find("f32 (default), f16, bf16"), std::string::npos) << run.out;
}

// --kv-type sweeps the cache's element type: a 16-bit cache's rows say so in their
// name and their kv_type field; the f32 rows keep the names they always had.
TEST(BenchCliTest, KvTypesAreRowsOfTheSweep) {
  const CliRun run = RunKvrt({"bench", "-m", TinyModel(), "-p", "8", "-n", "2", "--kv-type", "f32,bf16,f16", "-t",
                              "1", "-r", "2", "-o", "json", "-q"});
  ASSERT_EQ(run.status, 0) << run.err;
  const Json out = Json::parse(run.out);
  std::set<std::string> names, kv_types;
  for (const Json& row : out.at("benchmarks")) {
    if (row.at("run_type") != "aggregate" || row.at("aggregate_name") != "median") continue;
    names.insert(row.at("run_name").get<std::string>());
    kv_types.insert(row.at("kv_type").get<std::string>());
  }
  EXPECT_EQ(kv_types, std::set<std::string>({"f32", "f16", "bf16"}));
  EXPECT_TRUE(names.count("tg2/depth:0/seqs:1/threads:1/weights:as-stored/int8:0")) << run.out;
  EXPECT_TRUE(names.count("tg2/depth:0/seqs:1/threads:1/weights:as-stored/int8:0/kv:f16")) << run.out;
  EXPECT_TRUE(names.count("pp8/depth:0/seqs:1/threads:1/weights:as-stored/int8:0/kv:bf16")) << run.out;
  EXPECT_EQ(names.size(), 6u);
}

// Restricts the calling thread's affinity to one CPU of its current mask while in
// scope; a child started meanwhile inherits the restricted mask.
class OneCpuAffinity {
 public:
  OneCpuAffinity() {
    sched_getaffinity(0, sizeof saved_, &saved_);
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &saved_)) {
        CPU_SET(cpu, &one);
        break;
      }
    }
    applied_ = sched_setaffinity(0, sizeof one, &one) == 0;
  }
  ~OneCpuAffinity() { sched_setaffinity(0, sizeof saved_, &saved_); }
  bool applied() const { return applied_; }

 private:
  cpu_set_t saved_{};
  bool applied_ = false;
};

// Rows with int8 activations carry the int8 dot peak and judge the products of the
// matrices that take int8 by it, everything else (attention, the matrices int8 does
// not reach) by the FMA peak. With the prefill's operations S = F + I (I the int8
// part), a row without int8 gives p/R0 = S/fma0 and one with gives p/R1 = F/fma1 +
// I/int8: I follows from the two and must be a proper part of S (the attention
// stays on the FMA units); on f32 weights nothing takes int8 and the roofline is the
// FMA one.
// The jsonl rows of a pp32 bench of the tiny model in `weights` with `flag` 0,1.
std::vector<Json> OptInRows(const std::string& flag, const std::string& weights) {
  const CliRun run = RunKvrt({"bench", "-m", TinyModel(), "-p", "32", "-n", "0", "--weights", weights, flag, "0,1",
                              "-t", "1", "-r", "1", "-o", "jsonl", "-q"});
  EXPECT_EQ(run.status, 0) << run.err;
  std::vector<Json> rows;
  std::istringstream lines(run.out);
  for (std::string line; std::getline(lines, line);) {
    const Json row = Json::parse(line);
    if (row.contains("tokens_per_second")) rows.push_back(row);
  }
  return rows;
}

// A pair of rows without and with an opt-in rounding (`key`, its peak `peak_key`):
// the row with it carries its unit's peak and the one without does not; the products
// of the matrices it reaches are timed at that peak, most of the prefill where
// `reaches` (the attention stays on the FMA units), none of it otherwise.
void ExpectTimedAtItsPeak(const std::vector<Json>& rows, const char* key, const char* peak_key, bool reaches,
                          const std::string& what) {
  ASSERT_EQ(rows.size(), 2u) << what;
  const bool first_has_it = rows[0].at(key).get<bool>();
  const Json& plain = first_has_it ? rows[1] : rows[0];
  const Json& rounded = first_has_it ? rows[0] : rows[1];
  EXPECT_FALSE(plain.at(key).get<bool>()) << what;
  EXPECT_FALSE(plain.contains(peak_key)) << what;
  ASSERT_TRUE(rounded.contains(peak_key)) << what;
  const double peak = rounded.at(peak_key).get<double>();
  ASSERT_GT(peak, 0) << what;
  const double p = 32;
  const double fma0 = plain.at("fma_flops_per_second").get<double>(), fma1 = rounded.at("fma_flops_per_second").get<double>();
  const double all = p / plain.at("roofline_tokens_per_second").get<double>() * fma0;
  const double seconds1 = p / rounded.at("roofline_tokens_per_second").get<double>();
  const double part = (seconds1 - all / fma1) / (1 / peak - 1 / fma1);
  if (!reaches) {
    EXPECT_NEAR(seconds1 * fma1, all, 1e-9 * all) << what;
  } else {
    EXPECT_GT(part, 0.5 * all) << what << ": the matrices' products are most of the prefill";
    EXPECT_LT(part, all) << what << ": the attention stays on the FMA units";
  }
}

TEST(BenchCliTest, Int8RowsAreJudgedByTheInt8DotPeak) {
  for (const std::string weights : {"q8_0", "f32"}) {
    ExpectTimedAtItsPeak(OptInRows("--int8-activations", weights), "int8_activations", "int8_dot_ops_per_second",
                         weights == "q8_0", weights);
  }
}

// bf16 activations also name their rows /bf16:1, and the markdown and CSV tables gain
// their bf16 column only then.
TEST(BenchCliTest, Bf16RowsAreJudgedByTheBf16DotPeak) {
  for (const std::string weights : {"bf16", "f32"}) {
    const std::vector<Json> rows = OptInRows("--bf16-activations", weights);
    ExpectTimedAtItsPeak(rows, "bf16_activations", "bf16_dot_flops_per_second", weights == "bf16", weights);
    for (const Json& row : rows) {
      const std::string name = row.at("name").get<std::string>();
      const bool tagged = name.size() > 7 && name.compare(name.size() - 7, 7, "/bf16:1") == 0;
      EXPECT_EQ(tagged, row.at("bf16_activations").get<bool>()) << name;
      // Which unit the products and their peak ran on: the tiles, VDPBF16PS or FMAs.
      if (tagged) {
        const std::string unit = row.at("bf16_dot_unit").get<std::string>();
        EXPECT_TRUE(unit == "amx" || unit == "vdpbf16ps" || unit == "fma") << name << ": " << unit;
      } else {
        EXPECT_FALSE(row.contains("bf16_dot_unit")) << name;
      }
    }
  }
  const CliRun plain = RunKvrt({"bench", "-m", TinyModel(), "-p", "8", "-n", "0", "-t", "1", "-r", "1", "-q"});
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_NE(plain.out.find("| weights | int8 | kv |"), std::string::npos) << plain.out;
  const CliRun both = RunKvrt({"bench", "-m", TinyModel(), "-p", "8", "-n", "0", "-t", "1", "-r", "1", "-q",
                               "--weights", "bf16", "--bf16-activations", "1", "-o", "csv"});
  ASSERT_EQ(both.status, 0) << both.err;
  EXPECT_NE(both.out.find(",usable_cores,bf16_activations\n"), std::string::npos) << both.out;
}

TEST(BenchCliTest, MoreThreadsThanTheAffinityMaskAllowsIsSaidAndRecorded) {
  CliRun run;
  {
    OneCpuAffinity one_cpu;
    ASSERT_TRUE(one_cpu.applied());
    run = RunKvrt({"bench", "-m", TinyModel(), "-p", "8", "-n", "0", "-t", "1,2", "-r", "1", "-o", "json", "-q"});
  }
  ASSERT_EQ(run.status, 0) << run.err;
  // One warning, for -t 2 only (oneTBB may add its own about the workers it caps).
  const std::string warning = "kvrt bench: warning: -t 2 asks for more threads than the 1 CPU(s)";
  const size_t first = run.err.find(warning);
  EXPECT_NE(first, std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("kvrt bench: warning", first + 1), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("-t 1 "), std::string::npos) << run.err;
  EXPECT_EQ(Json::parse(run.out).at("context").at("usable_cpus"), 1) << run.out;

  const CliRun unrestricted = RunKvrt({"bench", "-m", TinyModel(), "-p", "8", "-n", "0", "-t", "1", "-r", "1", "-q"});
  ASSERT_EQ(unrestricted.status, 0) << unrestricted.err;
  EXPECT_TRUE(unrestricted.err.empty()) << unrestricted.err;
}

// The eight rows of TinyBench, in the order the sweep runs them.
const std::vector<std::string> kTinyRows = {
    "pp8/depth:0/seqs:1/threads:1/weights:as-stored/int8:0",
    "pp4+tg2/depth:0/seqs:1/threads:1/weights:as-stored/int8:0",
    "pp8/depth:8/seqs:1/threads:1/weights:as-stored/int8:0",
    "pp4+tg2/depth:8/seqs:1/threads:1/weights:as-stored/int8:0",
    "pp8/depth:0/seqs:2/threads:1/weights:as-stored/int8:0",
    "pp4+tg2/depth:0/seqs:2/threads:1/weights:as-stored/int8:0",
    "pp8/depth:8/seqs:2/threads:1/weights:as-stored/int8:0",
    "pp4+tg2/depth:8/seqs:2/threads:1/weights:as-stored/int8:0",
};

TEST(BenchCliTest, JsonHasGoogleBenchmarksShapeAndBenchCompareReadsIt) {
  const CliRun run = RunKvrt(TinyBench("json"));
  ASSERT_EQ(run.status, 0) << run.err;
  // Progress: a line per row with its ETA.
  EXPECT_NE(run.err.find("[8/8]"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("ETA"), std::string::npos) << run.err;
  const Json out = Json::parse(run.out);
  const Json& context = out.at("context");
  for (const char* key : {"num_cpus", "cpu_model", "simd_target", "allocator", "model", "repetitions"}) {
    EXPECT_TRUE(context.contains(key)) << key;
  }
  for (const char* key : {"version", "commit", "simd_target", "allocator"}) {
    EXPECT_TRUE(context.at("kvrt").contains(key)) << key;
  }
  std::vector<std::string> medians;
  size_t iterations = 0;
  for (const Json& row : out.at("benchmarks")) {
    for (const char* key : {"name", "run_name", "run_type", "repetitions", "real_time", "cpu_time", "time_unit",
                            "iterations", "family_index", "per_family_instance_index", "threads"}) {
      EXPECT_TRUE(row.contains(key)) << key << " in " << row.dump();
    }
    EXPECT_EQ(row.at("repetitions"), 2);
    EXPECT_EQ(row.at("time_unit"), "us");
    if (row.at("run_type") == "iteration") {
      ++iterations;
      EXPECT_GT(row.at("real_time").get<double>(), 0);
      EXPECT_TRUE(row.contains("repetition_index"));
      continue;
    }
    ASSERT_EQ(row.at("run_type"), "aggregate");
    EXPECT_TRUE(std::set<std::string>({"mean", "median", "stddev", "cv"}).count(row.at("aggregate_name").get<std::string>()));
    EXPECT_EQ(row.at("name"), row.at("run_name").get<std::string>() + "_" + row.at("aggregate_name").get<std::string>());
    for (const char* key : {"test", "depth", "sequences", "weights", "int8_activations", "tokens_per_second",
                            "tokens_per_second_stddev", "samples_tokens_per_second", "read_bytes_per_second",
                            "fma_flops_per_second", "roofline_tokens_per_second", "roofline_fraction"}) {
      EXPECT_TRUE(row.contains(key)) << key;
    }
    if (row.at("aggregate_name") != "median") continue;
    medians.push_back(row.at("run_name").get<std::string>());
    EXPECT_EQ(row.at("samples_tokens_per_second").size(), 2u);
    EXPECT_GT(row.at("tokens_per_second").get<double>(), 0);
    EXPECT_GT(row.at("read_bytes_per_second").get<double>(), 0);
    EXPECT_GT(row.at("fma_flops_per_second").get<double>(), 0);
    EXPECT_GT(row.at("roofline_fraction").get<double>(), 0);
  }
  EXPECT_EQ(medians, kTinyRows);
  EXPECT_EQ(iterations, 2 * kTinyRows.size());

  // The same run read back by bench-compare, against itself: every row compared, none slower.
  testing::ScratchDir scratch;
  const std::string path = scratch.File("bench.json");
  std::ofstream(path) << run.out;
  const CliRun compared = RunKvrt({"bench-compare", path, path});
  EXPECT_EQ(compared.status, 0) << compared.out << compared.err;
  for (const std::string& name : kTinyRows) EXPECT_NE(compared.out.find(name), std::string::npos) << name;
}

TEST(BenchCliTest, MarkdownCsvAndJsonLinesCarryEveryRowAndTheBuildFacts) {
  const CliRun md = RunKvrt(TinyBench("md"));
  ASSERT_EQ(md.status, 0) << md.err;
  EXPECT_NE(md.out.find("commit"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("CPU "), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("| weights | int8 | kv | threads | seqs | test | depth | t/s |"), std::string::npos) << md.out;
  size_t table_rows = 0;
  std::istringstream lines(md.out);
  for (std::string line; std::getline(lines, line);) table_rows += line.rfind("| as-stored |", 0) == 0;
  EXPECT_EQ(table_rows, kTinyRows.size()) << md.out;
  EXPECT_NE(md.out.find(" ± "), std::string::npos);

  std::vector<std::string> args = TinyBench("csv");
  args.push_back("-q");
  const CliRun csv = RunKvrt(args);
  ASSERT_EQ(csv.status, 0) << csv.err;
  EXPECT_TRUE(csv.err.empty()) << "-q prints no progress: " << csv.err;
  std::istringstream csv_lines(csv.out);
  std::string header;
  std::getline(csv_lines, header);
  EXPECT_EQ(header.rfind("model,weights,int8_activations,kv_type,threads,sequences,test,depth,tokens_per_second,", 0), 0u);
  for (const char* column : {"samples_tokens_per_second", "roofline_fraction", "commit", "simd_target", "allocator",
                             "cpu_model", "cores", "usable_cores"}) {
    EXPECT_NE(header.find(column), std::string::npos) << column;
  }
  size_t csv_rows = 0;
  for (std::string line; std::getline(csv_lines, line);) ++csv_rows;
  EXPECT_EQ(csv_rows, kTinyRows.size());

  const CliRun jsonl = RunKvrt(TinyBench("jsonl"));
  ASSERT_EQ(jsonl.status, 0) << jsonl.err;
  std::istringstream json_lines(jsonl.out);
  std::vector<std::string> names;
  for (std::string line; std::getline(json_lines, line);) {
    const Json row = Json::parse(line);
    names.push_back(row.at("name").get<std::string>());
    for (const char* key : {"model", "threads", "test", "depth", "sequences", "tokens_per_second",
                            "tokens_per_second_stddev", "samples_tokens_per_second", "read_bytes_per_second",
                            "fma_flops_per_second", "roofline_fraction", "kvrt", "cpu_model", "cores",
                            "usable_cores"}) {
      EXPECT_TRUE(row.contains(key)) << key;
    }
    EXPECT_TRUE(row.at("kvrt").contains("commit"));
  }
  EXPECT_EQ(names, kTinyRows);
}

}  // namespace
}  // namespace kvrt
