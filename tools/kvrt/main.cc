// kvrt: the command-line front end of the runtime. Thin: parses flags, calls the
// public API, prints.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <span>
#include <string>

#include "build_facts.h"
#include "commands.h"
#include "common.h"
#include "output.h"

namespace {

constexpr const char* kUsage =
    "kvrt — KV-cached decoder inference on the CPU\n"
    "\n"
    "Usage: kvrt <command> [flags]   (kvrt <command> --help for its flags)\n"
    "       kvrt --version            version, git commit, SIMD target and default threads\n"
    "\n"
    "Commands:\n"
    "  inspect PATH   what a model file (LLMCP35, GGUF, llama2.c) holds\n"
    "  tokenize       the token ids of a text, with the model file's own tokenizer\n"
    "  chat-template  the prompt text of a conversation, with the model's chat template\n"
    "  chat           talk with a chat model: the reply streams, the conversation stays in the KV cache\n"
    "  logits         last-position logits of a token sequence (cached or --uncached)\n"
    "  generate       sample a continuation (cached or --uncached loop)\n"
    "  batch          serve many generation requests (JSON lines) over sequence slots\n"
    "  report         the ch38 cached-generation report\n"
    "  bench          tokens/s of a model on this machine (llama-bench's tests) against its in-run roofline\n"
    "  bench-compare  performance gate over Google Benchmark JSON (two runs, or in-run ratios)\n"
    "  synth          write a random-weight model (llama2.c, LLMCP35 and/or GGUF) and a tokenizer.bin\n";

}  // namespace

static int Run(int argc, char** argv) {
  if (argc < 2) {
    // A missing command is a usage error: the usage goes to stderr so that stdout
    // stays empty for a script, followed by the one `error:` line every error prints.
    std::fprintf(stderr, "%s\n", kUsage);
    return kvrt::cli::ReportError(kvrt::cli::InvalidArgument("no command given"));
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    kvrt::cli::PrintStdout("%s\n", kvrt::cli::BuildFactsLine(kvrt::cli::CurrentBuildFacts()).c_str());
    return 0;
  }
  if (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "help") == 0) {
    kvrt::cli::PrintStdout("%s", kUsage);
    return 0;
  }
  const std::string command = argv[1];
  const std::span<char* const> args(argv + 2, static_cast<size_t>(argc - 2));
  if (command == "inspect") return kvrt::cli::RunInspect(args);
  if (command == "logits") return kvrt::cli::RunLogits(args);
  if (command == "generate") return kvrt::cli::RunGenerate(args);
  if (command == "batch") return kvrt::cli::RunBatch(args);
  if (command == "report") return kvrt::cli::RunReport(args);
  if (command == "bench") return kvrt::cli::RunBench(args);
  if (command == "bench-compare") return kvrt::cli::RunBenchCompare(args);
  if (command == "synth") return kvrt::cli::RunSynth(args);
  if (command == "tokenize") return kvrt::cli::RunTokenize(args);
  if (command == "chat-template") return kvrt::cli::RunChatTemplate(args);
  if (command == "chat") return kvrt::cli::RunChat(args);
  return kvrt::cli::ReportError(kvrt::cli::InvalidArgument("unknown command '" + command + "' (see kvrt --help)"));
}

// Last resort: the commands turn every failure they expect into a typed error;
// anything that still escapes (std::bad_alloc from a container of the CLI
// itself, a logic error) is reported in the same one-line form with exit status
// 2 instead of std::terminate's abort. fputs, not printf: no allocation on the
// way out of an out-of-memory failure.
int main(int argc, char** argv) {
  try {
    return kvrt::cli::FinishStdout(Run(argc, argv));
  } catch (const std::bad_alloc&) {
    std::fputs("error: AllocationFailed: out of memory\n", stderr);
  } catch (const std::exception& exception) {
    std::fputs("error: InternalError: ", stderr);
    std::fputs(exception.what(), stderr);
    std::fputs("\n", stderr);
  } catch (...) {
    std::fputs("error: InternalError: unknown exception\n", stderr);
  }
  return kvrt::cli::kErrorStatus;
}
