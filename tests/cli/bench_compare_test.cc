// kvrt bench-compare, the performance gate CI runs: it must fail on a real
// regression, tolerate the noise the run itself reports, and turn malformed input
// into a one-line error rather than a crash.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cli_runner.h"

namespace kvrt {
namespace {

using Json = nlohmann::json;
using testing::CliRun;
using testing::RunKvrt;

// One benchmark as Google Benchmark writes it with repetitions: per-repetition
// rows, then the median and cv aggregates (times in ns, cv as a fraction).
struct Bench {
  std::string name;
  double median_ns;
  double cv = 0.01;
  std::map<std::string, double> counters = {};
};

Json RunJson(const std::vector<Bench>& benches, const std::string& simd_target = "") {
  Json rows = Json::array();
  for (const Bench& bench : benches) {
    for (int repetition = 0; repetition < 3; ++repetition) {
      // Repetitions straddle the median so that only the aggregate row gives it.
      rows.push_back({{"name", bench.name}, {"run_name", bench.name}, {"run_type", "iteration"},
                      {"repetition_index", repetition}, {"real_time", bench.median_ns * (0.5 + repetition * 0.5)},
                      {"time_unit", "ns"}});
    }
    Json median = {{"name", bench.name + "_median"}, {"run_name", bench.name}, {"run_type", "aggregate"},
                   {"aggregate_name", "median"}, {"real_time", bench.median_ns}, {"time_unit", "ns"}};
    for (const auto& [key, value] : bench.counters) median[key] = value;
    rows.push_back(median);
    rows.push_back({{"name", bench.name + "_cv"}, {"run_name", bench.name}, {"run_type", "aggregate"},
                    {"aggregate_name", "cv"}, {"real_time", bench.cv}, {"time_unit", "ns"}});
  }
  Json context = {{"num_cpus", 2}};
  if (!simd_target.empty()) context["simd_target"] = simd_target;
  return {{"context", context}, {"benchmarks", rows}};
}

class BenchCompareTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const Json& json) {
    const std::string path = scratch_.File(name);
    std::ofstream(path) << json.dump(1);
    return path;
  }
  std::string WriteText(const std::string& name, const std::string& text) {
    const std::string path = scratch_.File(name);
    std::ofstream(path) << text;
    return path;
  }

  testing::ScratchDir scratch_;
};

TEST_F(BenchCompareTest, TwoRunsPassWithinTheThresholdAndFailBeyondIt) {
  const std::string baseline = Write("base.json", RunJson({{"Decode", 1000}, {"Prefill", 5000}}));
  const std::string close = Write("close.json", RunJson({{"Decode", 1080}, {"Prefill", 4000}}));
  const std::string slow = Write("slow.json", RunJson({{"Decode", 1300}, {"Prefill", 5000}}));

  const CliRun pass = RunKvrt({"bench-compare", baseline, close});
  EXPECT_EQ(pass.status, 0) << pass.err;
  EXPECT_EQ(pass.out.find("SLOWER"), std::string::npos) << pass.out;

  const CliRun fail = RunKvrt({"bench-compare", baseline, slow});
  EXPECT_EQ(fail.status, 1);
  EXPECT_NE(fail.out.find("Decode"), std::string::npos);
  EXPECT_NE(fail.out.find("SLOWER"), std::string::npos) << fail.out;
  EXPECT_NE(fail.err.find("PerformanceRegression"), std::string::npos) << fail.err;

  // A stricter or looser threshold moves the line.
  EXPECT_EQ(RunKvrt({"bench-compare", baseline, close, "--threshold", "0.05"}).status, 1);
  EXPECT_EQ(RunKvrt({"bench-compare", baseline, slow, "--threshold", "0.5"}).status, 0);
}

TEST_F(BenchCompareTest, ANoisyRunWidensTheAllowedSlowdownUpToACap) {
  // 20% slower, but both runs report a 10% coefficient of variation: within
  // min(3 × sqrt(0.1² + 0.1²), 0.25) = 25%, so this is not evidence of a regression.
  const std::string baseline = Write("base.json", RunJson({{"Decode", 1000, 0.10}}));
  const std::string noisy = Write("noisy.json", RunJson({{"Decode", 1200, 0.10}}));
  EXPECT_EQ(RunKvrt({"bench-compare", baseline, noisy}).status, 0);
  const std::string quiet_base = Write("quiet_base.json", RunJson({{"Decode", 1000, 0.001}}));
  const std::string quiet = Write("quiet.json", RunJson({{"Decode", 1200, 0.001}}));
  EXPECT_EQ(RunKvrt({"bench-compare", quiet_base, quiet}).status, 1);

  // A very noisy pair (cv 0.3 each: 3σ ≈ 127%) no longer excuses a 40% slowdown:
  // the noise allowance stops at --max-noise (default 0.25).
  const std::string wild_base = Write("wild_base.json", RunJson({{"Decode", 1000, 0.30}}));
  const std::string wild = Write("wild.json", RunJson({{"Decode", 1400, 0.30}}));
  EXPECT_EQ(RunKvrt({"bench-compare", wild_base, wild}).status, 1);
  EXPECT_EQ(RunKvrt({"bench-compare", wild_base, wild, "--max-noise", "0.5"}).status, 0);
  EXPECT_EQ(RunKvrt({"bench-compare", wild_base, wild, "--max-noise", "1.5"}).status, 2);
}

// One benchmark with the given repetitions (ns), their median and a cv aggregate.
Json SampledRun(const std::string& name, const std::vector<double>& samples_ns, double cv) {
  Json rows = Json::array();
  for (size_t i = 0; i < samples_ns.size(); ++i) {
    rows.push_back({{"name", name}, {"run_name", name}, {"run_type", "iteration"}, {"repetition_index", i},
                    {"real_time", samples_ns[i]}, {"time_unit", "ns"}});
  }
  std::vector<double> sorted = samples_ns;
  std::sort(sorted.begin(), sorted.end());
  rows.push_back({{"name", name + "_median"}, {"run_name", name}, {"run_type", "aggregate"},
                  {"aggregate_name", "median"}, {"real_time", sorted[sorted.size() / 2]}, {"time_unit", "ns"}});
  rows.push_back({{"name", name + "_cv"}, {"run_name", name}, {"run_type", "aggregate"}, {"aggregate_name", "cv"},
                  {"real_time", cv}, {"time_unit", "ns"}});
  return {{"context", {{"num_cpus", 2}}}, {"benchmarks", rows}};
}

TEST_F(BenchCompareTest, WithEnoughRepetitionsASlowdownMustAlsoBeSignificant) {
  const std::vector<double> base = {1000, 1002, 1004, 1006, 1008, 1010, 1012, 1014, 1016};
  const std::string baseline = Write("base.json", SampledRun("Decode", base, 0.05));
  // 12 % slower with tight samples: every current repetition is slower than every
  // baseline one (U = 81 of 81, p < 0.001). The cv aggregate of 5 % alone would
  // have allowed 1 + 3 · √2 · 5 % = 21 %; the U test catches it.
  std::vector<double> tight;
  for (double time : base) tight.push_back(time * 1.12);
  const std::string slower = Write("slower.json", SampledRun("Decode", tight, 0.05));
  const CliRun regression = RunKvrt({"bench-compare", baseline, slower});
  EXPECT_EQ(regression.status, 1) << regression.out;
  EXPECT_NE(regression.out.find("SLOWER"), std::string::npos) << regression.out;
  EXPECT_NE(regression.out.find("U test p"), std::string::npos) << regression.out;
  // The same slowdown at a stricter significance level is still significant; below
  // the threshold it is not a regression however significant.
  EXPECT_EQ(RunKvrt({"bench-compare", baseline, slower, "--alpha", "0.001"}).status, 1);
  EXPECT_EQ(RunKvrt({"bench-compare", baseline, slower, "--threshold", "0.15"}).status, 0);

  // A noisy neighbour: the current run's median is 15 % higher, but its repetitions
  // overlap the baseline's (a burst landed on some of them): not significant, a pass.
  const std::vector<double> wide_base = {600, 700, 800, 900, 1000, 1100, 1200, 1300, 1400};
  const std::vector<double> noisy = {650, 750, 850, 950, 1150, 1250, 1350, 1450, 1550};
  const std::string wide = Write("wide.json", SampledRun("Decode", wide_base, 0.01));
  const std::string neighbour = Write("neighbour.json", SampledRun("Decode", noisy, 0.01));
  const CliRun pass = RunKvrt({"bench-compare", wide, neighbour});
  EXPECT_EQ(pass.status, 0) << pass.out;
  EXPECT_EQ(pass.out.find("SLOWER"), std::string::npos) << pass.out;

  // --alpha belongs to the two-run comparison and must be a probability.
  EXPECT_EQ(RunKvrt({"bench-compare", baseline, slower, "--alpha", "0"}).status, 2);
  EXPECT_EQ(RunKvrt({"bench-compare", baseline, slower, "--alpha", "1.5"}).status, 2);
}

// Separate runs of each binary merged into one file per side (only iteration rows,
// no aggregates, as docs/perf_gate.md's loop with jq makes them): the ratio is of
// the medians of the runs, not of whichever run came last.
TEST_F(BenchCompareTest, MergedRunsWithoutAggregatesCompareTheirMedians) {
  const auto merged = [](const std::vector<double>& times_ns) {
    Json rows = Json::array();
    for (double time : times_ns) {
      rows.push_back({{"name", "Decode"}, {"run_name", "Decode"}, {"run_type", "iteration"},
                      {"real_time", time}, {"time_unit", "ns"}});
    }
    return Json{{"context", {{"num_cpus", 2}}}, {"benchmarks", rows}};
  };
  const std::string base = Write("base.json", merged({1000, 1010, 990, 1005, 995, 1002, 998, 1001, 999}));
  // Every run 12 % slower except the last one, which is the baseline's speed.
  const std::string slower = Write("slower.json", merged({1120, 1130, 1110, 1125, 1115, 1122, 1118, 1121, 1000}));
  const CliRun regression = RunKvrt({"bench-compare", base, slower, "--threshold", "0.05"});
  EXPECT_EQ(regression.status, 1) << regression.out;
  EXPECT_NE(regression.out.find("1.12"), std::string::npos) << regression.out;  // medians 1120 / 1000
  // And the other way round: one slow last run does not fail a build that is not slower.
  const std::string same = Write("same.json", merged({1001, 999, 1003, 997, 1000, 1002, 998, 1004, 1200}));
  EXPECT_EQ(RunKvrt({"bench-compare", base, same, "--threshold", "0.05"}).status, 0);
}

TEST_F(BenchCompareTest, TheTwoRunsMustHoldTheSameBenchmarks) {
  const std::string both = Write("both.json", RunJson({{"Decode", 1000}, {"Prefill", 5000}}));
  const std::string decode_only = Write("decode.json", RunJson({{"Decode", 1000}}));
  const std::string other = Write("other.json", RunJson({{"Unrelated", 1000}}));

  // Nothing in common: never a pass.
  const CliRun disjoint = RunKvrt({"bench-compare", both, other, "--allow-missing", "--allow-new"});
  EXPECT_EQ(disjoint.status, 2);
  EXPECT_NE(disjoint.err.find("share no benchmark"), std::string::npos) << disjoint.err;

  // Prefill dropped from CURRENT.
  const CliRun missing = RunKvrt({"bench-compare", both, decode_only});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("missing from"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("Prefill"), std::string::npos) << missing.err;
  EXPECT_EQ(RunKvrt({"bench-compare", both, decode_only, "--allow-missing"}).status, 0);

  // Prefill added in CURRENT.
  const CliRun added = RunKvrt({"bench-compare", decode_only, both});
  EXPECT_EQ(added.status, 2);
  EXPECT_NE(added.err.find("new in"), std::string::npos) << added.err;
  EXPECT_EQ(RunKvrt({"bench-compare", decode_only, both, "--allow-new"}).status, 0);

  // An empty run has nothing to vouch for.
  const std::string empty = WriteText("empty.json", "{\"benchmarks\": []}");
  EXPECT_EQ(RunKvrt({"bench-compare", both, empty}).status, 2);
  EXPECT_EQ(RunKvrt({"bench-compare", empty, both}).status, 2);
}

TEST_F(BenchCompareTest, InputFailuresAreOneLineErrorsNeverExceptions) {
  const std::string run = Write("run.json", RunJson({{"Decode", 1000}}));
  // A directory where a file belongs once aborted with std::ios_failure.
  const std::string directory = scratch_.File("");
  const std::string huge = scratch_.File("huge.json");
  std::ofstream(huge) << "{}";
  std::filesystem::resize_file(huge, (uint64_t{64} << 20) + 1);  // sparse: cheap to make
  const std::string gate = Write("gate.json", Json{{"ratios", Json::array({{{"name", "r"}, {"numerator", "Decode"},
                                                                          {"denominator", "Decode"},
                                                                          {"minimum", 1}}})}});
  const std::vector<std::vector<std::string>> cases = {
      {"bench-compare", ".", "."},
      {"bench-compare", run, directory},
      {"bench-compare", run, huge},
      {"bench-compare", "--gate", directory, run},
      {"bench-compare", "--gate", huge, run},
      {"bench-compare", "--gate", gate, directory},
  };
  for (const std::vector<std::string>& args : cases) {
    const CliRun result = RunKvrt(args);
    EXPECT_EQ(result.status, 2) << args[2] << " " << result.err;
    EXPECT_EQ(result.err.rfind("error: Io: could not read ", 0), 0u) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  }
  EXPECT_NE(RunKvrt({"bench-compare", run, huge}).err.find("over the limit"), std::string::npos);
}

Json Gate(const Json& ratios) { return {{"ratios", ratios}}; }

TEST_F(BenchCompareTest, GateChecksInRunRatiosAgainstMinimumAndBaseline) {
  const Json ratios = Json::array({
      {{"name", "dot speed-up"}, {"numerator", "Dot/twin"}, {"denominator", "Dot/fast"}, {"minimum", 8},
       {"baseline", 12}},
      {{"name", "roofline"}, {"benchmark", "Decode"}, {"counter", "roofline_fraction"}, {"minimum", 0.5}},
  });
  const std::string gate = Write("gate.json", Gate(ratios));
  // One run split over two files, like bench_kernels + bench_engine.
  const std::string kernels = Write("kernels.json", RunJson({{"Dot/twin", 1200}, {"Dot/fast", 100}}));
  const std::string engine =
      Write("engine.json", RunJson({{"Decode", 1000, 0.01, {{"roofline_fraction", 0.9}}}}));
  const CliRun pass = RunKvrt({"bench-compare", "--gate", gate, kernels, engine});
  EXPECT_EQ(pass.status, 0) << pass.out << pass.err;
  EXPECT_NE(pass.out.find("dot speed-up"), std::string::npos);
  EXPECT_NE(pass.out.find("12.000"), std::string::npos) << pass.out;

  // Above the committed minimum (9 > 8) but well below the baseline (12 × 0.9).
  const std::string slower = Write("slower.json", RunJson({{"Dot/twin", 900}, {"Dot/fast", 100}}));
  const CliRun below_baseline = RunKvrt({"bench-compare", "--gate", gate, slower, engine});
  EXPECT_EQ(below_baseline.status, 1);
  EXPECT_NE(below_baseline.out.find("FAIL"), std::string::npos);

  // A counter below its minimum fails too.
  const std::string starved =
      Write("starved.json", RunJson({{"Decode", 1000, 0.01, {{"roofline_fraction", 0.3}}}}));
  EXPECT_EQ(RunKvrt({"bench-compare", "--gate", gate, kernels, starved}).status, 1);

  // A per-ratio tolerance loosens only that ratio (thread scaling on a shared machine).
  Json tolerant = ratios;
  tolerant[0]["tolerance"] = 0.3;
  const std::string tolerant_gate = Write("tolerant.json", Gate(tolerant));
  EXPECT_EQ(RunKvrt({"bench-compare", "--gate", tolerant_gate, slower, engine}).status, 0);
}

// A ratio may carry another floor for one SIMD target, chosen by the simd_target the
// run's JSON context records; a run on any other target, or one that records none,
// keeps the entry's own floor, and the files of one run must agree on the target.
TEST_F(BenchCompareTest, GateFloorsMayDependOnTheRunsSimdTarget) {
  const Json ratios = Json::array({
      {{"name", "dot speed-up"}, {"numerator", "Dot/twin"}, {"denominator", "Dot/fast"}, {"minimum", 8},
       {"baseline", 12}, {"targets", {{"AVX2", {{"minimum", 4}, {"baseline", 6}}}}}},
  });
  const std::string gate = Write("gate.json", Gate(ratios));
  const std::vector<Bench> six_times = {{"Dot/twin", 600}, {"Dot/fast", 100}};
  const std::string avx2 = Write("avx2.json", RunJson(six_times, "AVX2"));
  const CliRun pass = RunKvrt({"bench-compare", "--gate", gate, avx2});
  EXPECT_EQ(pass.status, 0) << pass.out << pass.err;
  EXPECT_NE(pass.out.find("SIMD target: AVX2"), std::string::npos) << pass.out;
  EXPECT_NE(pass.out.find("(AVX2 floor)"), std::string::npos) << pass.out;

  for (const std::string& other : {std::string("AVX3"), std::string()}) {
    const std::string path = Write("other" + other + ".json", RunJson(six_times, other));
    const CliRun result = RunKvrt({"bench-compare", "--gate", gate, path});
    EXPECT_EQ(result.status, 1) << other << result.out;
    EXPECT_NE(result.out.find("FAIL"), std::string::npos) << result.out;
  }
  // The AVX2 floor still fails what falls below it.
  const std::string slow = Write("slow.json", RunJson({{"Dot/twin", 300}, {"Dot/fast", 100}}, "AVX2"));
  EXPECT_EQ(RunKvrt({"bench-compare", "--gate", gate, slow}).status, 1);

  const std::string avx3 = Write("avx3.json", RunJson({{"Decode", 1000}}, "AVX3"));
  const CliRun mixed = RunKvrt({"bench-compare", "--gate", gate, avx2, avx3});
  EXPECT_EQ(mixed.status, 2);
  EXPECT_NE(mixed.err.find("different SIMD targets"), std::string::npos) << mixed.err;

  // A malformed override is an error on every machine, not only on its target's.
  const std::vector<Json> bad_targets = {Json(3), Json{{"AVX2", 1}}, Json{{"AVX2", {{"minimum", "x"}}}},
                                         Json{{"AVX2", {{"floor", 1}}}}, Json{{"AVX2", {{"minimum", 0}, {"baseline", 0}}}}};
  for (size_t i = 0; i < bad_targets.size(); ++i) {
    Json bad = ratios;
    bad[0]["targets"] = bad_targets[i];
    const std::string path = Write("bad_targets_" + std::to_string(i) + ".json", Gate(bad));
    const CliRun result = RunKvrt({"bench-compare", "--gate", path, avx3});
    EXPECT_EQ(result.status, 2) << bad_targets[i].dump();
    EXPECT_NE(result.err.find("InvalidArgument"), std::string::npos) << result.err;
  }
}

TEST_F(BenchCompareTest, MissingBenchmarksAndMalformedFilesAreErrors) {
  const std::string run = Write("run.json", RunJson({{"Dot/twin", 1200}, {"Dot/fast", 100}}));
  const std::string gate = Write(
      "gate.json", Gate(Json::array({{{"name", "absent"}, {"numerator", "Nope"}, {"denominator", "Dot/fast"},
                                      {"minimum", 1}}})));
  const CliRun missing = RunKvrt({"bench-compare", "--gate", gate, run});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("'Nope' is not in the run"), std::string::npos) << missing.err;

  const std::vector<Json> bad_gates = {
      Json::object(),
      Gate(Json::array()),
      Gate(Json::array({42})),
      Gate(Json::array({{{"numerator", "Dot/twin"}, {"denominator", "Dot/fast"}, {"minimum", 1}}})),  // no name
      Gate(Json::array({{{"name", "both"}, {"numerator", "Dot/twin"}, {"denominator", "Dot/fast"},
                         {"benchmark", "Dot/fast"}, {"counter", "x"}, {"minimum", 1}}})),
      Gate(Json::array({{{"name", "no floor"}, {"numerator", "Dot/twin"}, {"denominator", "Dot/fast"}}})),
      Gate(Json::array({{{"name", 7}, {"numerator", 1}, {"denominator", 2}, {"minimum", "x"}}})),
  };
  for (size_t i = 0; i < bad_gates.size(); ++i) {
    const std::string path = Write("bad_gate_" + std::to_string(i) + ".json", bad_gates[i]);
    const CliRun result = RunKvrt({"bench-compare", "--gate", path, run});
    EXPECT_EQ(result.status, 2) << bad_gates[i].dump();
    EXPECT_NE(result.err.find("InvalidArgument"), std::string::npos) << result.err;
  }

  const std::vector<std::string> bad_runs = {"not json", "{}", "{\"benchmarks\": 3}",
                                             "{\"benchmarks\": [1, {\"name\": 2, \"real_time\": \"x\"}]}"};
  for (size_t i = 0; i < bad_runs.size(); ++i) {
    const std::string path = WriteText("bad_run_" + std::to_string(i) + ".json", bad_runs[i]);
    const CliRun result = RunKvrt({"bench-compare", run, path});
    // A list with no usable rows is rejected too: there is nothing to compare.
    EXPECT_EQ(result.status, 2) << bad_runs[i];
    EXPECT_EQ(result.err.find("terminate"), std::string::npos) << result.err;
  }
  EXPECT_EQ(RunKvrt({"bench-compare", run, scratch_.File("absent.json")}).status, 2);
  EXPECT_EQ(RunKvrt({"bench-compare", run}).status, 2);
  EXPECT_EQ(RunKvrt({"bench-compare", run, run, "--threshold", "-1"}).status, 2);
}

}  // namespace
}  // namespace kvrt
