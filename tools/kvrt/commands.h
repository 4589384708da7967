// The kvrt subcommands. Each takes the arguments after its name, prints its
// output, and returns the process exit status (0 ok, 2 on any error, after
// printing exactly one line `error: <VariantName>: <message>` on stderr).
#pragma once

#include <span>

namespace kvrt::cli {

int RunInspect(std::span<char* const> args);
int RunLogits(std::span<char* const> args);
int RunGenerate(std::span<char* const> args);
int RunBatch(std::span<char* const> args);
int RunReport(std::span<char* const> args);
int RunBench(std::span<char* const> args);
int RunBenchCompare(std::span<char* const> args);
int RunSynth(std::span<char* const> args);
int RunTokenize(std::span<char* const> args);
int RunChatTemplate(std::span<char* const> args);
int RunChat(std::span<char* const> args);

}  // namespace kvrt::cli
