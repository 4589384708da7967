// Runs the kvrt CLI binary (KVRT_CLI_PATH) as a user would: arguments quoted for
// the shell, stdout captured, stderr captured through a file, exit status decoded.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "test_support.h"

namespace kvrt::testing {

struct CliRun {
  int status = -1;
  std::string out;
  std::string err;
};

inline std::string ShellQuote(const std::string& arg) {
  std::string quoted = "'";
  for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

inline CliRun RunKvrt(const std::vector<std::string>& args) {
  static int counter = 0;
  const std::string err_path =
      (std::filesystem::temp_directory_path() /
       ("kvrt_cli_" + std::to_string(getpid()) + "_" + std::to_string(counter++)))
          .string();
  std::string command = ShellQuote(KVRT_CLI_PATH);
  for (const std::string& arg : args) command += " " + ShellQuote(arg);
  command += " 2>" + ShellQuote(err_path);
  CliRun run;
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) run.out.append(buffer, n);
  const int status = pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.err = ReadText(err_path);
  std::filesystem::remove(err_path);
  return run;
}

// `kvrt logits ... --json`'s logits; a failed run or unparsable output fails the test
// and gives no logits.
inline std::vector<double> RunLogits(const std::vector<std::string>& args) {
  const CliRun run = RunKvrt(args);
  EXPECT_EQ(run.status, 0) << run.err;
  const nlohmann::json out = nlohmann::json::parse(run.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(out.is_discarded()) << run.out;
  return out.is_discarded() ? std::vector<double>{} : out.at("logits").get<std::vector<double>>();
}

// The bundled demo checkpoint and 18 of its tokens: the model and prompt the opt-in
// path tests (rounded activations, batch-variant attention) compare logits on.
inline std::string DemoModel() { return FixturePath("demo/demo.ckpt"); }
inline constexpr const char* kDemoPrompt = "67,118,5,9,33,2,71,40,12,3,77,5,19,4,88,23,1,9";

// "1,2,3" for --tokens.
inline std::string JoinIds(const std::vector<uint32_t>& ids) {
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) text += (i ? "," : "") + std::to_string(ids[i]);
  return text;
}

}  // namespace kvrt::testing
