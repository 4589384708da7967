// kvrt batch: serve many generation requests over the sequence slots of one
// cache (ServeGenerationStream). Each line of the requests file is one request
// (batch_request.h: the fields of `generate`, the sampler set, stops, logprobs
// and `special` included) meaning exactly what the same flags mean to
// `generate`. Each
// output line is the `generate --json` object of that request with its id first,
// identical apart from the id to what `generate --json` prints for the request
// alone, in request order.
//
// The file is read twice, a chunk at a time, and never held whole: first every
// line is checked (a bad line is one typed error naming it, and no output), then
// the requests are served as they are read again. Memory is bounded by the
// slots and the longest line, not by the number of requests.
#include <array>
#include <cstdio>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "batch_request.h"
#include "commands.h"
#include "common.h"
#include "generate_request.h"
#include "kvrt/generation.h"
#include "kvrt/model.h"
#include "kvrt/model_file.h"
#include "output.h"
#include "request_lines.h"

namespace kvrt::cli {
namespace {

using Json = nlohmann::json;

constexpr FlagSpec kBatchFlags[] = {
    {"model", true, "model file (LLMCP35 checkpoint, llama2.c model.bin or GGUF)", 'm'},
    {"tokenizer", true, "llama2.c tokenizer.bin (replaces the checkpoint's tokenizer)"},
    {"requests", true, "JSON lines, one request per line (see docs/batching.md)"},
    {"slots", true, "sequences decoded at once (default 4)"},
    {"prefill-chunk", true, "most prompt tokens per sequence per step (default: as many as fit)"},
    {"help", false, "show this help"},
};
constexpr auto kFlags = [] {
  std::array<FlagSpec, std::size(kBatchFlags) + std::size(kContextFlags) + std::size(kEngineFlags)> all{};
  size_t i = 0;
  for (const FlagSpec& flag : kBatchFlags) all[i++] = flag;
  for (const FlagSpec& flag : kContextFlags) all[i++] = flag;
  for (const FlagSpec& flag : kEngineFlags) all[i++] = flag;
  return all;
}();

// The first pass: every line parsed and checked, nothing kept.
Result<void> CheckEveryLine(RequestLines& lines, const BatchContext& context) {
  size_t index = 0;
  while (true) {
    Result<std::optional<std::string_view>> line = lines.Next();
    if (!line) return std::unexpected(line.error());
    if (!*line) return {};
    Result<std::optional<BatchRequest>> request = ParseBatchRequest(**line, lines.line_number(), index, context);
    if (!request) return std::unexpected(request.error());
    if (*request) ++index;
  }
}

// The second pass: the requests, read again one at a time as the driver asks.
// Their ids wait here, in order, until their results are printed.
class RequestsFileSource final : public GenerationRequestSource {
 public:
  RequestsFileSource(RequestLines& lines, const BatchContext& context) : lines_(lines), context_(context) {}

  Result<std::optional<GenerationRequest>> Next() override {
    while (true) {
      Result<std::optional<std::string_view>> line = lines_.Next();
      if (!line) return std::unexpected(line.error());
      if (!*line) return std::optional<GenerationRequest>();
      // The first pass accepted this line; it can only fail now if the file
      // changed in between, and then the error is reported as it is.
      Result<std::optional<BatchRequest>> request =
          ParseBatchRequest(**line, lines_.line_number(), index_, context_);
      if (!request) return std::unexpected(request.error());
      if (!*request) continue;
      ++index_;
      ids_.push_back(std::move((*request)->id_json));
      return std::optional<GenerationRequest>(std::move((*request)->request));
    }
  }

  // The id of the oldest request whose result is not printed yet.
  std::string TakeOldestId() {
    std::string id = std::move(ids_.front());
    ids_.pop_front();
    return id;
  }

 private:
  RequestLines& lines_;
  const BatchContext& context_;
  size_t index_ = 0;
  std::deque<std::string> ids_;
};

}  // namespace

int RunBatch(std::span<char* const> args) {
  Result<Flags> flags = Flags::Parse(args, kFlags);
  if (!flags) return ReportError(flags.error());
  if (flags->Has("help")) {
    PrintStdout("%s", Usage("kvrt batch --model PATH --requests FILE.jsonl [--slots N] [options]", kFlags)
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
  Result<uint64_t> context_size = flags->Unsigned("ctx-size", 0);
  if (!context_size) return ReportError(context_size.error());
  Result<EngineChoice> engine_choice = EngineFromFlags(*flags);
  if (!engine_choice) return ReportError(engine_choice.error());

  Result<RequestLines> lines = RequestLines::Open(*requests_path);
  if (!lines) return ReportError(lines.error());
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
  const BatchContext context{*loaded, tokenizer, flags->Has("tokenizer"), *context_size};

  if (Result<void> checked = CheckEveryLine(*lines, context); !checked) return ReportError(checked.error());
  lines->Rewind();

  RequestsFileSource source(*lines, context);
  StreamOptions options;
  options.serve.slots = *slots;
  options.serve.engine = engine_choice->options;
  options.serve.prefill_chunk = *chunk;
  options.serve.capacity = *context_size;
  const size_t threads = EngineThreads(engine_choice->options);
  bool some_failed = false;
  const ServedCallback print = [&](size_t, ServedGeneration& out) -> Result<void> {
    const std::string id = source.TakeOldestId();
    if (out.error) {
      // A failure while running (not a bad line): this request's error, the
      // others' results.
      some_failed = true;
      const Json error = std::string(out.error->name()) + ": " + out.error->message();
      return WriteStdout("{\"error\":" + error.dump(-1, ' ', false, Json::error_handler_t::replace) +
                         ",\"id\":" + id + "}\n");
    }
    const std::string json = GenerationJson(out.result, out.final_rng_state, /*cached=*/true, threads);
    // The id goes first: `{"id":…,` then generate's object without its brace.
    return WriteStdout("{\"id\":" + id + "," + json.substr(1) + "\n");
  };
  if (Result<void> served = ServeGenerationStream(loaded->model, source, print, options); !served) {
    return ReportError(served.error());
  }
  if (Result<void> flushed = FlushStdout(); !flushed) return ReportError(flushed.error());
  if (some_failed) {
    std::fprintf(stderr, "error: RequestFailed: some requests failed while running (see their lines)\n");
    return kErrorStatus;
  }
  return 0;
}

}  // namespace kvrt::cli
