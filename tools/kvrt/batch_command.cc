// kvrt batch: serve many generation requests over the sequence slots of one
// cache (ServeGenerations). Each line of the requests file is one request with
// the fields of `generate` (tokens or prompt and special, max_new_tokens, greedy
// or temperature + top_k, rng_state or seed, eos or no_eos) plus optional id and
// arrival_step. A line means exactly what the same flags mean to `generate`:
// it is turned into those flags and read by the same code. Each output line is
// the `generate --json` object of that request with its id first, identical
// apart from the id to what `generate --json` prints for the request alone.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "generate_request.h"
#include "input_file.h"
#include "kvrt/generation.h"
#include "kvrt/model.h"
#include "kvrt/model_file.h"

namespace kvrt::cli {
namespace {

using Json = nlohmann::json;

constexpr FlagSpec kBatchFlags[] = {
    {"model", true, "model file (LLMCP35 checkpoint, llama2.c model.bin or GGUF)"},
    {"tokenizer", true, "llama2.c tokenizer.bin (replaces the checkpoint's tokenizer)"},
    {"requests", true, "JSON lines, one request per line (see docs/batching.md)"},
    {"slots", true, "sequences decoded at once (default 4)"},
    {"prefill-chunk", true, "most prompt tokens per sequence per step (default: as many as fit)"},
    {"help", false, "show this help"},
};
constexpr auto kFlags = JoinFlags(kBatchFlags, kEngineFlags);

// Requests files are small; anything far larger is a wrong path.
constexpr uint64_t kMaxRequestsBytes = uint64_t{256} << 20;

Error LineError(size_t line, const Error& inner) {
  return Error(inner.code(), {{"line", uint64_t{line}}},
               "requests line " + std::to_string(line) + ": " + inner.message());
}

Error LineError(size_t line, const std::string& message) {
  return LineError(line, InvalidArgument(message));
}

// One request line as `generate` flags ("--tokens", "1,2", ...).
Result<std::vector<std::string>> LineFlags(const Json& line, size_t number, Json& id,
                                           size_t& arrival_step) {
  if (!line.is_object()) return std::unexpected(LineError(number, "a request is a JSON object"));
  std::vector<std::string> args;
  auto add = [&](const char* flag, std::string value) {
    args.push_back(std::string("--") + flag);
    args.push_back(std::move(value));
  };
  for (const auto& [key, value] : line.items()) {
    const bool unsigned_value = value.is_number_unsigned();
    if (key == "id") {
      if (!value.is_string() && !unsigned_value) {
        return std::unexpected(LineError(number, "\"id\" must be a string or an unsigned integer"));
      }
      id = value;
    } else if (key == "arrival_step") {
      if (!unsigned_value) return std::unexpected(LineError(number, "\"arrival_step\" must be an unsigned integer"));
      arrival_step = value.get<size_t>();
    } else if (key == "tokens") {
      if (!value.is_array()) return std::unexpected(LineError(number, "\"tokens\" must be an array of token ids"));
      std::string list;
      for (const Json& token : value) {
        if (!token.is_number_unsigned()) {
          return std::unexpected(LineError(number, "\"tokens\" must be an array of token ids"));
        }
        if (!list.empty()) list += ',';
        list += std::to_string(token.get<uint64_t>());
      }
      add("tokens", list);
    } else if (key == "prompt") {
      if (!value.is_string()) return std::unexpected(LineError(number, "\"prompt\" must be a string"));
      add("prompt", value.get<std::string>());
    } else if (key == "max_new_tokens" || key == "top_k" || key == "seed") {
      if (!unsigned_value) return std::unexpected(LineError(number, "\"" + key + "\" must be an unsigned integer"));
      std::string flag = key == "max_new_tokens" ? "max-new-tokens" : key == "top_k" ? "top-k" : "seed";
      add(flag.c_str(), std::to_string(value.get<uint64_t>()));
    } else if (key == "temperature") {
      if (!value.is_number()) return std::unexpected(LineError(number, "\"temperature\" must be a number"));
      add("temperature", value.dump());  // the shortest text that reads back as the same double
    } else if (key == "rng_state") {
      if (!value.is_string()) return std::unexpected(LineError(number, "\"rng_state\" must be a hex string"));
      add("rng-state", value.get<std::string>());
    } else if (key == "eos") {
      if (value.is_null()) {
        args.push_back("--no-eos");
      } else if (unsigned_value) {
        add("eos", std::to_string(value.get<uint64_t>()));
      } else {
        return std::unexpected(LineError(number, "\"eos\" must be a token id or null"));
      }
    } else if (key == "greedy" || key == "no_eos" || key == "special") {
      if (!value.is_boolean()) return std::unexpected(LineError(number, "\"" + key + "\" must be true or false"));
      if (value.get<bool>()) args.push_back("--" + std::string(key == "no_eos" ? "no-eos" : key));
    } else {
      return std::unexpected(LineError(number, "unknown field \"" + key + "\""));
    }
  }
  return args;
}

struct ParsedRequest {
  GenerationRequest request;
  Json id;
  size_t line = 0;
};

Result<std::string> ReadRequestsFile(const std::string& path) {
  return ReadInputFile(path, "a requests file", kMaxRequestsBytes);
}

}  // namespace

int RunBatch(std::span<char* const> args) {
  Result<Flags> flags = Flags::Parse(args, kFlags);
  if (!flags) return ReportError(flags.error());
  if (flags->Has("help")) {
    std::printf("%s", Usage("kvrt batch --model PATH --requests FILE.jsonl [--slots N] [options]", kFlags)
                          .c_str());
    return 0;
  }
  Result<std::string> path = flags->Required("model");
  if (!path) return ReportError(path.error());
  Result<std::string> requests_path = flags->Required("requests");
  if (!requests_path) return ReportError(requests_path.error());
  Result<uint64_t> slots = flags->Unsigned("slots", 4);
  if (!slots) return ReportError(slots.error());
  if (*slots == 0 || *slots > 4096) return ReportError(InvalidArgument("--slots must be in 1..4096"));
  Result<uint64_t> chunk = flags->Unsigned("prefill-chunk", 0);
  if (!chunk) return ReportError(chunk.error());
  Result<EngineChoice> engine_choice = EngineFromFlags(*flags);
  if (!engine_choice) return ReportError(engine_choice.error());

  Result<std::string> text = ReadRequestsFile(*requests_path);
  if (!text) return ReportError(text.error());
  Result<LoadedModel> loaded = LoadModel(*path);
  if (!loaded) return ReportError(loaded.error());
  if (std::optional<std::string> tokenizer_path = flags->Value("tokenizer")) {
    Result<Tokenizer> llama2c =
        LoadLlama2cTokenizer(*tokenizer_path, loaded->model.config().vocabulary_size);
    if (!llama2c) return ReportError(llama2c.error());
    loaded->tokenizer = std::move(*llama2c);
  }
  const Tokenizer no_tokenizer;
  const Tokenizer& tokenizer = loaded->tokenizer ? *loaded->tokenizer : no_tokenizer;

  // Every line is read and checked before anything runs: a bad line is one
  // typed error naming it, and no output.
  std::vector<ParsedRequest> parsed;
  size_t line_number = 0;
  for (size_t begin = 0; begin < text->size();) {
    size_t end = text->find('\n', begin);
    if (end == std::string::npos) end = text->size();
    const std::string line = text->substr(begin, end - begin);
    begin = end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank line
    const Json json = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) return ReportError(LineError(line_number, "not valid JSON"));
    ParsedRequest request;
    request.line = line_number;
    request.id = parsed.size();
    Result<std::vector<std::string>> line_args =
        LineFlags(json, line_number, request.id, request.request.arrival_step);
    if (!line_args) return ReportError(line_args.error());
    std::vector<char*> argv;
    for (std::string& arg : *line_args) argv.push_back(arg.data());
    Result<Flags> line_flags = Flags::Parse(argv, kRequestFlags);
    if (!line_flags) return ReportError(LineError(line_number, line_flags.error()));
    Result<GenerationConfig> config = RequestConfigFromFlags(*line_flags);
    if (!config) return ReportError(LineError(line_number, config.error()));
    request.request.config = *config;
    Result<RequestInput> input = RequestInputFromFlags(*line_flags, *loaded, tokenizer,
                                                       flags->Has("tokenizer"),
                                                       request.request.config);
    if (!input) return ReportError(LineError(line_number, input.error()));
    request.request.prompt = std::move(input->prompt);
    request.request.rng_state = input->rng_state;
    // What GenerateCached would refuse before running (prompt length, ids, EOS,
    // sampling parameters), refused here with the line's number.
    if (Result<void> valid = ValidateCachedRequest(loaded->model.config(), request.request.prompt,
                                                   request.request.config);
        !valid) {
      return ReportError(LineError(line_number, valid.error()));
    }
    parsed.push_back(std::move(request));
  }

  std::vector<GenerationRequest> requests;
  requests.reserve(parsed.size());
  for (const ParsedRequest& request : parsed) requests.push_back(request.request);
  ServeOptions options;
  options.slots = *slots;
  options.engine = engine_choice->options;
  options.prefill_chunk = *chunk;
  Result<std::vector<ServedGeneration>> served = ServeGenerations(loaded->model, requests, options);
  if (!served) return ReportError(served.error());
  const size_t threads = EngineThreads(engine_choice->options);
  int status = 0;
  for (size_t i = 0; i < served->size(); ++i) {
    const ServedGeneration& out = (*served)[i];
    if (out.error) {
      // A failure while running (not a bad line): this request's error, the
      // others' results.
      Json line = {{"id", parsed[i].id},
                   {"error", std::string(out.error->name()) + ": " + out.error->message()}};
      std::printf("%s\n", line.dump().c_str());
      status = kErrorStatus;
      continue;
    }
    const std::string json = GenerationJson(out.result, GeneratedText(tokenizer, out.result),
                                            out.final_rng_state, /*cached=*/true, threads);
    // The id goes first: `{"id":…,` then generate's object without its brace.
    std::printf("{\"id\":%s,%s\n", parsed[i].id.dump().c_str(), json.c_str() + 1);
  }
  std::fflush(stdout);
  if (status != 0) {
    std::fprintf(stderr, "error: RequestFailed: some requests failed while running (see their lines)\n");
  }
  return status;
}

}  // namespace kvrt::cli
