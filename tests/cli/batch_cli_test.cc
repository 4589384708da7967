// kvrt batch against kvrt generate --json: for random request files
// written here (never in the repo), every output line equals, apart from its id,
// what `generate --json` prints for that request alone; bad lines are one typed
// error naming the line.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "test_support.h"

namespace kvrt {
namespace {

using testing::RunKvrt;
using Json = nlohmann::json;

class BatchCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = dir_.File("m.bin");
    tokenizer_ = dir_.File("tok.bin");
    const testing::CliRun synth =
        RunKvrt({"synth", "--dim", "64", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--ffn",
                 "96", "--vocab", "300", "--seq-len", "96", "--seed", "11", "--llama2c", model_,
                 "--tokenizer", tokenizer_});
    ASSERT_EQ(synth.status, 0) << synth.err;
  }

  std::string WriteRequests(const std::vector<std::string>& lines) {
    const std::string path = dir_.File("requests" + std::to_string(files_++) + ".jsonl");
    std::ofstream out(path);
    for (const std::string& line : lines) out << line << "\n";
    return path;
  }

  testing::ScratchDir dir_;
  std::string model_, tokenizer_;
  int files_ = 0;
};

// A random request, as a JSON line and as the generate flags that mean the same.
struct Request {
  Json line;
  std::vector<std::string> flags;
};

Request RandomRequest(std::mt19937_64& rng, size_t index) {
  Request r;
  r.line["id"] = "r" + std::to_string(index);
  const size_t length = 1 + rng() % (rng() % 3 == 0 ? 80 : 10);
  if (rng() % 4 == 0) {
    std::string text;
    for (size_t i = 0; i < length; ++i) text += static_cast<char>('a' + rng() % 26);
    r.line["prompt"] = text;
    r.flags = {"--prompt", text};
  } else {
    std::vector<uint32_t> tokens;
    for (size_t i = 0; i < length; ++i) tokens.push_back(static_cast<uint32_t>(rng() % 300));
    r.line["tokens"] = tokens;
    r.flags = {"--tokens", testing::JoinIds(tokens)};
  }
  const size_t budget = rng() % 20;
  r.line["max_new_tokens"] = budget;
  r.flags.insert(r.flags.end(), {"--max-new-tokens", std::to_string(budget)});
  if (rng() % 2 == 0) {
    const double temperature = 0.25 + static_cast<double>(rng() % 1000) / 400.0;
    const size_t top_k = 1 + rng() % 40;
    r.line["temperature"] = temperature;
    r.line["top_k"] = top_k;
    r.flags.insert(r.flags.end(), {"--temperature", Json(temperature).dump(), "--top-k", std::to_string(top_k)});
  } else if (rng() % 2 == 0) {
    r.line["greedy"] = true;
    r.flags.push_back("--greedy");
  }
  if (rng() % 2 == 0) {
    const uint64_t seed = rng() % 100000;
    r.line["seed"] = seed;
    r.flags.insert(r.flags.end(), {"--seed", std::to_string(seed)});
  } else {
    char hex[24];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(rng()));
    r.line["rng_state"] = hex;
    r.flags.insert(r.flags.end(), {"--rng-state", hex});
  }
  switch (rng() % 3) {
    case 0: {
      const uint32_t eos = static_cast<uint32_t>(rng() % 300);
      r.line["eos"] = eos;
      r.flags.insert(r.flags.end(), {"--eos", std::to_string(eos)});
      break;
    }
    case 1:
      r.line["eos"] = nullptr;
      r.flags.push_back("--no-eos");
      break;
    default:
      break;  // the tokenizer's default (BOS), as generate chooses it
  }
  if (rng() % 3 == 0) r.line["arrival_step"] = rng() % 30;
  return r;
}

TEST_F(BatchCliTest, EveryLineEqualsGenerateJsonAlone) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    std::mt19937_64 rng(seed);
    std::vector<Request> requests;
    std::vector<std::string> lines;
    for (size_t i = 0; i < 7 + seed; ++i) {
      requests.push_back(RandomRequest(rng, i));
      lines.push_back(requests.back().line.dump());
    }
    const std::string threads = std::to_string(1 + seed % 2);
    const std::string slots = std::to_string(1 + rng() % 4);
    std::vector<std::string> args = {"batch", "--model", model_, "--tokenizer", tokenizer_,
                                     "--requests", WriteRequests(lines), "--slots", slots,
                                     "--threads", threads};
    if (seed == 2) args.insert(args.end(), {"--prefill-chunk", "5"});
    const testing::CliRun batch = RunKvrt(args);
    ASSERT_EQ(batch.status, 0) << batch.err;
    std::vector<Json> out;
    for (const std::string& line : testing::Lines(batch.out)) out.push_back(Json::parse(line));
    ASSERT_EQ(out.size(), requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      EXPECT_EQ(out[i]["id"], requests[i].line["id"]);
      out[i].erase("id");
      std::vector<std::string> alone = {"generate", "--model", model_, "--tokenizer", tokenizer_,
                                        "--threads", threads, "--json"};
      alone.insert(alone.end(), requests[i].flags.begin(), requests[i].flags.end());
      const testing::CliRun generate = RunKvrt(alone);
      ASSERT_EQ(generate.status, 0) << generate.err;
      EXPECT_EQ(out[i], Json::parse(generate.out))
          << "seed " << seed << " request " << i << ": " << lines[i];
    }
  }
}

TEST_F(BatchCliTest, ABadLineIsOneTypedErrorNamingIt) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"tokens\":[1,2],\"max_new_tokens\":3,\"bogus\":1}",
       "error: InvalidArgument: requests line 2: unknown field \"bogus\"\n"},
      {"{\"tokens\":[1,2],\"prompt\":\"x\"}",
       "error: InvalidArgument: requests line 2: give exactly one of --tokens and --prompt\n"},
      {"{\"tokens\":[1,2],\"temperature\":0.5}",
       "error: InvalidArgument: requests line 2: --temperature and --top-k go together\n"},
      {"{\"tokens\":[1,400]}",
       "error: PromptTokenOutOfBounds: requests line 2: cached generation prompt token 400 at "
       "position 1 is out of bounds for vocabulary 300\n"},
      {"[1,2]", "error: InvalidArgument: requests line 2: a request is a JSON object\n"},
      {"{\"tokens\":", "error: InvalidArgument: requests line 2: not valid JSON\n"},
  };
  for (const auto& [bad, expected] : cases) {
    const std::string path = WriteRequests({"{\"tokens\":[1],\"max_new_tokens\":2}", bad});
    const testing::CliRun run =
        RunKvrt({"batch", "--model", model_, "--tokenizer", tokenizer_, "--requests", path});
    EXPECT_EQ(run.status, 2) << bad;
    EXPECT_EQ(run.out, "") << bad;
    EXPECT_EQ(run.err, expected) << bad;
  }
  const testing::CliRun missing = RunKvrt({"batch", "--model", model_, "--requests", dir_.File("none")});
  EXPECT_EQ(missing.status, 2);
}

}  // namespace
}  // namespace kvrt
