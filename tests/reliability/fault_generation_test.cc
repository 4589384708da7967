// Allocation faults in both generation loops (spec/sampling.md §5): every
// allocation of GenerateCached and GenerateUncached, on each engine, fails once
// per sweep. A failure must be a typed error that changed no parameter revision
// and left no borrow behind, and, where every allocation precedes the first
// sample, consumed no random draw.
#include <gtest/gtest.h>

#include <optional>

#include "fault_state.h"
#include "fault_sweep.h"
#include "kvrt/generation.h"
#include "generate/generate.h"

namespace kvrt {
namespace {

using testing::AllocationHook;
using testing::FaultCase;
using testing::Sweep;

class GenerationFaultTest : public ::testing::TestWithParam<bool> {};

TEST_P(GenerationFaultTest, BothLoopsOnEveryEngine) {
  // A fresh model per attempt: the fast engine packs a model's weights on its
  // first bind, and those allocations belong to the sweep too.
  std::optional<DecoderModel> model;
  testing::ParameterState parameters;
  GenerationConfig request;
  request.mode = SamplingMode::TemperatureTopK(0.8, 3);
  request.max_new_tokens = 3;
  const std::vector<uint32_t> prompt = {1, 2};
  constexpr uint64_t kSeed = 36;

  for (bool cached : {true, false}) {
    for (const testing::EngineCase& engine : testing::AllEngines()) {
      SplitMix64 rng(kSeed);
      std::optional<GenerationResult> expected;
      FaultCase fault_case;
      fault_case.name = std::string(cached ? "GenerateCached" : "GenerateUncached") + "(" +
                        engine.name + (GetParam() ? ", grouped" : "") + ")";
      fault_case.prepare = [&] {
        rng = SplitMix64(kSeed);
        model.emplace(testing::FaultModel(GetParam()));
        parameters = testing::StateOf(*model);
      };
      fault_case.run = [&]() -> std::optional<Error> {
        Result<GenerationResult> result =
            cached ? GenerateCached(*model, prompt, request, rng, engine.options)
                   : GenerateUncached(*model, prompt, request, rng, engine.options);
        if (!result) return result.error();
        if (!expected) expected = *result;  // the clean run
        EXPECT_EQ(result->generated, expected->generated);
        EXPECT_EQ(result->steps, expected->steps);
        return std::nullopt;
      };
      // The uncached reference loop runs a complete-prefix forward per step, which
      // allocates; a failure after the first step keeps that step's draw. Every
      // other loop allocates before its first draw.
      const bool draws_before_failure = !cached && engine.options.backend == Backend::kReference;
      fault_case.expect_unchanged = [&] {
        if (!draws_before_failure) {
          EXPECT_EQ(rng.state(), SplitMix64(kSeed).state()) << "a failed run consumed draws";
        }
        EXPECT_EQ(testing::StateOf(*model), parameters);
      };
      fault_case.expect_succeeded = [&] { EXPECT_EQ(testing::StateOf(*model), parameters); };
      for (AllocationHook hook : {AllocationHook::kRuntimeBuffers, AllocationHook::kHeap}) {
        Sweep(fault_case, hook);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, GenerationFaultTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param_info) {
                           return param_info.param ? "GroupedUntied" : "Ch38Geometry";
                         });

}  // namespace
}  // namespace kvrt
