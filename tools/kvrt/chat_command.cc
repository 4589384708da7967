// kvrt chat: an interactive conversation with a GGUF chat model. Each line read
// from stdin is the user's message; the reply streams to stdout. The
// conversation stays in one session's KV cache: every turn renders the whole
// conversation with the model's template and forwards only the tokens past what
// the cache holds (chat_turns.h), so a turn costs its own tokens, not the
// history's. Ctrl-C stops the current reply (what was said so far stays in the
// conversation); Ctrl-C at the prompt, `/exit` or end of input leaves. A line on
// stderr after every reply gives the turn's token counts.
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat_turns.h"
#include "commands.h"
#include "common.h"
#include "generate_request.h"
#include "kvrt/chat.h"
#include "kvrt/load_model.h"
#include "kvrt/model.h"
#include "kvrt/sampling.h"
#include "kvrt/session.h"
#include "output.h"
#include "text_stream.h"

namespace kvrt::cli {
namespace {

constexpr FlagSpec kCommandFlags[] = {
    {"model", true, "GGUF model file with a chat template (tokenizer.chat_template)"},
    {"system", true, "a system message that opens the conversation"},
    {"max-new-tokens", true, "most tokens of one reply (default 512)", 'n'},
    {"seed", true, "SplitMix64 seed for sampling (default 0); the draws go on from turn to turn", 's'},
    {"help", false, "show this help"},
};
// generate's sampler flags, with its spellings, help and meaning.
constexpr std::string_view kSamplerFlagNames[] = {
    "greedy",         "temperature",   "top-k",         "top-p",
    "min-p",          "typical-p",     "repeat-penalty", "repeat-last-n",
    "presence-penalty", "frequency-penalty", "logit-bias"};
constexpr auto kFlags = [] {
  std::array<FlagSpec, std::size(kCommandFlags) + std::size(kContextFlags) + std::size(kSamplerFlagNames) +
                           std::size(kEngineFlags)>
      all{};
  size_t i = 0;
  for (const FlagSpec& flag : kCommandFlags) all[i++] = flag;
  for (const FlagSpec& flag : kContextFlags) all[i++] = flag;
  for (const std::string_view name : kSamplerFlagNames) {
    for (const FlagSpec& flag : kRequestFlags) {
      if (name == flag.name) all[i++] = flag;
    }
  }
  for (const FlagSpec& flag : kEngineFlags) all[i++] = flag;
  return all;
}();
static_assert(std::size(kFlags) == std::size(kCommandFlags) + std::size(kContextFlags) + std::size(kSamplerFlagNames) +
                                       std::size(kEngineFlags));

// Set by SIGINT; read between tokens (and by the line reader).
volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void OnInterrupt(int) { g_interrupted = 1; }

// SIGINT interrupts a blocking read (no SA_RESTART), so Ctrl-C at the prompt is seen.
void InstallInterruptHandler() {
  struct sigaction action {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(SIGINT, &action, nullptr);
}

enum class LineRead { kLine, kEnd, kInterrupted };

// One line of stdin without its newline, read byte by byte with read(2): stdio
// would retry an interrupted read, and the prompt must notice Ctrl-C.
LineRead ReadLine(std::string& line) {
  line.clear();
  for (;;) {
    char c = 0;
    const ssize_t n = ::read(STDIN_FILENO, &c, 1);
    if (n == 1) {
      if (c == '\n') return LineRead::kLine;
      line.push_back(c);
      continue;
    }
    if (n < 0 && errno == EINTR) {
      if (g_interrupted) return LineRead::kInterrupted;
      continue;
    }
    return line.empty() ? LineRead::kEnd : LineRead::kLine;  // EOF ends a last unterminated line
  }
}

enum class ReplyEnd { kEndOfGeneration, kBudget, kContextFull, kInterrupted };

const char* ReplyEndName(ReplyEnd end) {
  switch (end) {
    case ReplyEnd::kEndOfGeneration: return "end of turn";
    case ReplyEnd::kBudget: return "max-new-tokens";
    case ReplyEnd::kContextFull: return "context full";
    case ReplyEnd::kInterrupted: return "interrupted";
  }
  return "";
}

struct Chat {
  const Tokenizer& tokenizer;
  const ChatTemplate& format;
  CachedConversation& conversation;
  Session& session;
  size_t vocabulary_size;  // the model's: one logit per id
  SamplerChoice sampler;
  uint64_t rng_state;  // where the next reply's draws start
  uint64_t max_new_tokens;
  std::vector<ChatMessage> messages;
};

bool IsEndOfGeneration(const Tokenizer& tokenizer, uint32_t token) {
  for (const uint32_t id : tokenizer.end_of_generation_ids()) {
    if (id == token) return true;
  }
  return token == tokenizer.eos_id();
}

// One turn: the user's message, the reply streamed, the reply kept. An error
// leaves the messages as they were before the message (the cache may hold some
// of its rows; the next turn's common-prefix check drops them).
Result<void> Turn(Chat& chat, const std::string& user, size_t turn) {
  chat.messages.push_back({"user", user});
  auto undo = [&](const Error& error) {
    chat.messages.pop_back();
    return std::unexpected(error);
  };
  Result<std::string> rendered = chat.format.Apply(chat.messages, /*add_generation_prompt=*/true);
  if (!rendered) return undo(rendered.error());
  Result<std::vector<uint32_t>> tokens = chat.tokenizer.EncodePrompt(*rendered, SpecialTokens::kParse);
  if (!tokens) return undo(tokens.error());
  const size_t capacity = chat.session.cache().capacity();
  if (tokens->size() >= capacity) {
    return undo(Error(ErrorCode::kPromptTooLong, {{"tokens", uint64_t{tokens->size()}}, {"capacity", uint64_t{capacity}}},
                      "the conversation is " + std::to_string(tokens->size()) +
                          " tokens, the context holds " + std::to_string(capacity)));
  }
  g_interrupted = 0;  // a Ctrl-C from here on stops this reply, even before its first token
  const KvWork before = chat.session.cache().work();
  TurnPrompt cost;
  // The penalties look at the whole conversation, as llama.cpp's chat accepts the
  // prompt into its sampler; the RNG goes on where the last reply left it.
  Result<TokenSampler> sampler = TokenSampler::Create(chat.sampler.mode, chat.sampler.options,
                                                      chat.vocabulary_size, chat.rng_state);
  if (!sampler) return undo(sampler.error());
  for (const uint32_t token : *tokens) {
    if (Result<void> accepted = sampler->Accept(token); !accepted) return undo(accepted.error());
  }
  Result<std::span<const double>> logits = chat.conversation.Extend(*tokens, cost);
  if (!logits) return undo(logits.error());
  const KvWork after_prompt = chat.session.cache().work();

  Utf8Stream stream(stdout);
  std::vector<uint32_t> reply;
  std::optional<uint32_t> previous = tokens->back();
  ReplyEnd end = ReplyEnd::kBudget;
  while (reply.size() < chat.max_new_tokens) {
    if (g_interrupted) {
      end = ReplyEnd::kInterrupted;
      break;
    }
    Result<TokenSelection> next = sampler->Sample(*logits);
    if (!next) return undo(next.error());
    const uint32_t token = next->token_id;
    if (Result<void> accepted = sampler->Accept(token); !accepted) return undo(accepted.error());
    if (IsEndOfGeneration(chat.tokenizer, token)) {
      end = ReplyEnd::kEndOfGeneration;
      break;
    }
    if (Result<std::string_view> bytes = chat.tokenizer.TokenBytesAfter(previous, token)) {
      stream.Write(*bytes);
      (void)FlushStdout();  // a failure is remembered and reported when the command ends
    }
    previous = token;
    reply.push_back(token);
    if (chat.session.cache().len() == capacity) {
      end = ReplyEnd::kContextFull;
      break;
    }
    logits = chat.conversation.Append(token);
    if (!logits) return undo(logits.error());
  }
  stream.Finish();
  PrintStdout("\n");
  (void)FlushStdout();
  Result<std::string> text = chat.tokenizer.DecodeContent(reply);
  chat.messages.push_back({"assistant", text ? *text : std::string()});
  chat.rng_state = sampler->rng_state();
  const KvWork after = chat.session.cache().work();
  std::fprintf(stderr,
               "[turn %zu: conversation %zu tokens, %zu already in the cache, %zu forwarded "
               "(prefill %llu, decode %llu); reply %zu tokens (%s, decode %llu); cache %zu of %zu]\n",
               turn, cost.conversation_tokens, cost.reused, cost.forwarded,
               static_cast<unsigned long long>(after_prompt.prefill_tokens - before.prefill_tokens),
               static_cast<unsigned long long>(after_prompt.decode_tokens - before.decode_tokens), reply.size(),
               ReplyEndName(end), static_cast<unsigned long long>(after.decode_tokens - after_prompt.decode_tokens),
               chat.session.cache().len(), capacity);
  return {};
}

}  // namespace

int RunChat(std::span<char* const> args) {
  Result<Flags> flags = Flags::Parse(args, kFlags);
  if (!flags) return ReportError(flags.error());
  if (flags->Has("help")) {
    PrintStdout("%s", Usage("kvrt chat --model PATH [--system TEXT] [options]", kFlags).c_str());
    return 0;
  }
  Result<std::string> path = flags->Required("model");
  if (!path) return ReportError(path.error());
  Result<SamplerChoice> sampler = SamplerChoiceFromFields(RequestFieldsFromFlags(*flags));
  if (!sampler) return ReportError(sampler.error());
  Result<uint64_t> max_new_tokens = flags->Unsigned("max-new-tokens", 512);
  if (!max_new_tokens) return ReportError(max_new_tokens.error());
  Result<uint64_t> seed = flags->Unsigned("seed", 0);
  if (!seed) return ReportError(seed.error());
  Result<uint64_t> context_size = flags->Unsigned("ctx-size", 0);
  if (!context_size) return ReportError(context_size.error());
  Result<EngineChoice> engine = EngineFromFlags(*flags);
  if (!engine) return ReportError(engine.error());

  Result<LoadedModel> loaded = LoadModel(*path);
  if (!loaded) return ReportError(loaded.error());
  if (!loaded->tokenizer) return ReportError(InvalidArgument(*path + " has no tokenizer to chat with"));
  if (Result<void> fits = CheckContextSize(loaded->model, *context_size); !fits) return ReportError(fits.error());
  const Tokenizer& tokenizer = *loaded->tokenizer;
  Result<ChatTemplate> format = ChatTemplate::ForTokenizer(tokenizer);
  if (!format) return ReportError(format.error());
  // The checks TokenSampler::Create makes at every turn, made once before the first.
  if (Result<TokenSampler> valid = TokenSampler::Create(sampler->mode, sampler->options,
                                                        loaded->model.config().vocabulary_size, *seed);
      !valid) {
    return ReportError(valid.error());
  }
  SessionOptions options;
  options.engine = engine->options;
  options.capacity = *context_size;
  Result<Session> session = Session::Open(loaded->model, options);
  if (!session) return ReportError(session.error());
  CachedConversation conversation(*session);
  Chat chat{tokenizer,
            *format,
            conversation,
            *session,
            loaded->model.config().vocabulary_size,
            std::move(*sampler),
            *seed,
            *max_new_tokens,
            {}};
  if (std::optional<std::string> system = flags->Value("system")) chat.messages.push_back({"system", *system});

  InstallInterruptHandler();
  std::fprintf(stderr, "kvrt chat: %s, template %s, context %zu tokens. Ctrl-C stops a reply; /exit, Ctrl-D or "
               "Ctrl-C at the prompt leaves.\n",
               path->c_str(), std::string(format->name()).c_str(), session->cache().capacity());
  std::string line;
  for (size_t turn = 1;; ) {
    PrintStdout("> ");
    // Nobody can read the replies: stop, and main reports the failed write.
    if (!FlushStdout()) break;
    const LineRead read = ReadLine(line);
    if (read != LineRead::kLine) {
      PrintStdout("\n");
      break;
    }
    if (line == "/exit") break;
    if (line.empty()) continue;
    if (Result<void> done = Turn(chat, line, turn); !done) {
      ReportError(done.error());  // the conversation is as it was; the next line is a new try
      continue;
    }
    ++turn;
  }
  return 0;
}

}  // namespace kvrt::cli
