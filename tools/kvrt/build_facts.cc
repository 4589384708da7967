#include "build_facts.h"

#include "build_info.h"
#include "git_commit.h"  // KVRT_GIT_COMMIT, stamped at build time
#include "kvrt/version.h"
#include "process_allocator.h"

namespace kvrt::cli {

BuildFacts CurrentBuildFacts(size_t threads) {
  return BuildFacts{KVRT_VERSION_STRING, KVRT_GIT_COMMIT, std::string(SimdTarget()),
                    threads != 0 ? threads : DefaultThreads(), allocator::ProcessAllocatorName()};
}

std::string BuildFactsLine(const BuildFacts& facts) {
  return "kvrt " + facts.version + " (commit " + facts.commit + ", simd " + facts.simd_target + ", " +
         std::to_string(facts.threads) + (facts.threads == 1 ? " thread" : " threads") + ", allocator " +
         facts.allocator + ")";
}

void WriteBuildFacts(JsonWriter& json, const BuildFacts& facts) {
  json.Key("kvrt").BeginObject();
  json.Key("version").String(facts.version);
  json.Key("commit").String(facts.commit);
  json.Key("simd_target").String(facts.simd_target);
  json.Key("threads").Unsigned(facts.threads);
  json.Key("allocator").String(facts.allocator);
  json.EndObject();
}

}  // namespace kvrt::cli
