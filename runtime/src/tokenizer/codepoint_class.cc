#include "tokenizer/codepoint_class.h"

#include <algorithm>

namespace kvrt::tokenizer {

CodepointClass ClassOf(uint32_t codepoint) {
  const CodepointRun* end = kCodepointRuns + kCodepointRunCount;
  // The last run starting at or before `codepoint`; the first run starts at 0.
  const CodepointRun* after = std::upper_bound(
      kCodepointRuns, end, codepoint,
      [](uint32_t value, const CodepointRun& run) { return value < run.start; });
  return (after - 1)->value;
}

}  // namespace kvrt::tokenizer
