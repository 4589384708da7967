// A session driver: the input is a tiny model choice and then a sequence of
// operations (new cache, clone, bind with the reference or the fast f32/f64
// engine, prefill, decode, reset, session drop, parameter update), each checked
// against the spec by SessionWorld. See session_world.h.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "session_world.h"

namespace {

// Enough for long state-machine walks; longer inputs only repeat them.
constexpr size_t kMaxOperations = 256;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvrt::fuzz::FuzzInput input(data, size);
  kvrt::fuzz::SessionWorld world(input);
  for (size_t i = 0; i < kMaxOperations && !input.empty(); ++i) world.Step(input);
  return 0;
}
