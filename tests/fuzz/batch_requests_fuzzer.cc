// `kvrt batch` request files (JSON lines) on arbitrary bytes, through the CLI's
// own reader and parser (tools/kvrt: request_lines, batch_request) and the
// streaming request driver, on a tiny model with a llama2.c tokenizer.
// Properties:
//   * every line is a request that passes GenerateCached's checks, or one typed
//     error naming its line, as one line of text of at most 1024 bytes;
//   * a second pass over the same file reads the same requests (the serving
//     pass re-reads the file after the checking pass);
//   * the valid requests, served over two slots with at most one result held,
//     are delivered once each, in order, and each equals GenerateCached for that
//     request alone (tokens, steps, stop, final RNG state).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "batch_request.h"
#include "formats/llama2c/llama2c.h"
#include "fuzz_check.h"
#include "kvrt/generation.h"
#include "kvrt/load_model.h"
#include "kvrt/model.h"
#include "request_lines.h"

namespace kvrt::fuzz {
namespace {

// Requests served per input: each costs a generation on both sides.
constexpr size_t kMaxServed = 6;

struct World {
  LoadedModel loaded;
  Tokenizer tokenizer;
};

const World& TheWorld() {
  static const World world = [] {
    ModelConfig config = ModelConfig::Create(300, 16, 2, 32, 1, 24, 10000.0, 1e-5);
    SplitMix64 rng(12);
    Result<Model> model = Model::FromSeed(config, rng);
    KVRT_FUZZ_CHECK(model, Describe(model));
    Result<Tokenizer> tokenizer = SyntheticLlama2cTokenizer(300, 5);
    KVRT_FUZZ_CHECK(tokenizer, Describe(tokenizer));
    return World{LoadedModel{ModelFormat::kLlama2c, std::move(*model), std::nullopt, std::nullopt, 0},
                 std::move(*tokenizer)};
  }();
  return world;
}

// The input as a file the reader can open: an anonymous in-memory file.
class MemoryFile {
 public:
  explicit MemoryFile(const uint8_t* data, size_t size) : fd_(::memfd_create("requests", MFD_CLOEXEC)) {
    KVRT_FUZZ_CHECK(fd_ >= 0, "memfd_create");
    for (size_t done = 0; done < size;) {
      const ssize_t wrote = ::write(fd_, data + done, size - done);
      KVRT_FUZZ_CHECK(wrote > 0, "write to memfd");
      done += static_cast<size_t>(wrote);
    }
  }
  ~MemoryFile() { ::close(fd_); }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

void CheckLineError(const Error& error, size_t line) {
  CheckTypedError(error);
  const std::string& message = error.message();
  KVRT_FUZZ_CHECK(message.size() <= 1024, "message of " + std::to_string(message.size()) + " bytes");
  for (const char c : message) {
    const auto byte = static_cast<unsigned char>(c);
    KVRT_FUZZ_CHECK(byte >= 0x20 && byte != 0x7F, "a control character in: " + message.substr(0, 200));
  }
  KVRT_FUZZ_CHECK(message.rfind("requests line " + std::to_string(line) + " ", 0) == 0 ||
                      message.rfind("requests line " + std::to_string(line) + ":", 0) == 0,
                  "the error does not name line " + std::to_string(line) + ": " + message.substr(0, 200));
}

// Every line of the file: the requests, or nullopt after checking the error.
std::optional<std::vector<cli::BatchRequest>> ReadAll(cli::RequestLines& lines, const cli::BatchContext& context) {
  std::vector<cli::BatchRequest> requests;
  while (true) {
    Result<std::optional<std::string_view>> line = lines.Next();
    if (!line) {
      CheckLineError(line.error(), lines.line_number() + 1);
      return std::nullopt;
    }
    if (!*line) return requests;
    Result<std::optional<cli::BatchRequest>> request =
        cli::ParseBatchRequest(**line, lines.line_number(), requests.size(), context);
    if (!request) {
      CheckLineError(request.error(), lines.line_number());
      return std::nullopt;
    }
    if (!*request) continue;
    const nlohmann::json id = nlohmann::json::parse((*request)->id_json, nullptr, false);
    KVRT_FUZZ_CHECK(!id.is_discarded(), "id is not JSON: " + (*request)->id_json);
    const GenerationRequest& r = (*request)->request;
    KVRT_FUZZ_CHECK(ValidateCachedRequest(context.loaded.model.config(), r.prompt, r.config), "unchecked request");
    requests.push_back(std::move(**request));
  }
}

bool SameRequest(const GenerationRequest& a, const GenerationRequest& b) {
  return a.prompt == b.prompt && a.rng_state == b.rng_state && a.arrival_step == b.arrival_step &&
         a.config.max_new_tokens == b.config.max_new_tokens && a.config.eos_token == b.config.eos_token &&
         a.config.mode.kind == b.config.mode.kind && a.config.mode.temperature == b.config.mode.temperature &&
         a.config.mode.top_k == b.config.mode.top_k;
}

class ListSource final : public GenerationRequestSource {
 public:
  explicit ListSource(const std::vector<cli::BatchRequest>& requests) : requests_(requests) {}
  Result<std::optional<GenerationRequest>> Next() override {
    if (next_ == requests_.size() || next_ == kMaxServed) return std::optional<GenerationRequest>();
    return std::optional<GenerationRequest>(requests_[next_++].request);
  }
  size_t handed_out() const { return next_; }

 private:
  const std::vector<cli::BatchRequest>& requests_;
  size_t next_ = 0;
};

void ServeAndCompare(const World& world, const std::vector<cli::BatchRequest>& requests) {
  ListSource source(requests);
  size_t delivered = 0;
  const ServedCallback check = [&](size_t index, ServedGeneration& served) -> Result<void> {
    KVRT_FUZZ_CHECK(index == delivered, "delivered " + std::to_string(index) + " after " + std::to_string(delivered));
    ++delivered;
    const GenerationRequest& request = requests[index].request;
    SplitMix64 rng(request.rng_state);
    Result<GenerationResult> alone = GenerateCached(world.loaded.model, request.prompt, request.config, rng);
    KVRT_FUZZ_CHECK(alone.has_value() == !served.error.has_value(),
                    "served " + (served.error ? served.error->Debug() : std::string("ok")) + ", alone " +
                        Describe(alone));
    if (alone) {
      KVRT_FUZZ_CHECK(alone->generated == served.result.generated && alone->steps == served.result.steps &&
                          alone->stop == served.result.stop && alone->work == served.result.work &&
                          alone->final_cache_len == served.result.final_cache_len &&
                          rng.state() == served.final_rng_state,
                      "request " + std::to_string(index) + " differs from its solo run");
    }
    return {};
  };
  StreamOptions options;
  options.serve.slots = 2;
  options.max_held_results = 1;
  Result<void> ran = ServeGenerationStream(world.loaded.model, source, check, options);
  KVRT_FUZZ_CHECK(ran, Describe(ran));
  KVRT_FUZZ_CHECK(delivered == source.handed_out(), "not every request was delivered");
}

}  // namespace
}  // namespace kvrt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvrt;
  const fuzz::World& world = fuzz::TheWorld();
  const cli::BatchContext context{world.loaded, world.tokenizer, /*llama2c_tokenizer=*/true};
  const fuzz::MemoryFile file(data, size);
  Result<cli::RequestLines> lines = cli::RequestLines::Open(file.path());
  KVRT_FUZZ_CHECK(lines, fuzz::Describe(lines));
  const std::optional<std::vector<cli::BatchRequest>> first = fuzz::ReadAll(*lines, context);
  if (!first) return 0;
  lines->Rewind();
  const std::optional<std::vector<cli::BatchRequest>> second = fuzz::ReadAll(*lines, context);
  KVRT_FUZZ_CHECK(second && second->size() == first->size(), "the second pass read other requests");
  for (size_t i = 0; i < first->size(); ++i) {
    KVRT_FUZZ_CHECK(fuzz::SameRequest((*first)[i].request, (*second)[i].request) &&
                        (*first)[i].id_json == (*second)[i].id_json,
                    "request " + std::to_string(i) + " read differently");
  }
  fuzz::ServeAndCompare(world, *first);
  return 0;
}
