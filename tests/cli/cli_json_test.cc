// Every --json output is valid JSON whatever bytes its strings hold: a path
// that is not UTF-8 once produced output no JSON parser accepts.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "cli_runner.h"

namespace kvrt {
namespace {

using Json = nlohmann::json;
using testing::CliRun;
using testing::FixturePath;
using testing::RunKvrt;

TEST(CliJsonTest, ANonUtf8PathStillGivesValidJson) {
  testing::ScratchDir scratch;
  const std::string path = scratch.File("model\xff\xfe.ckpt");  // Latin-1 bytes, invalid UTF-8
  std::filesystem::copy_file(FixturePath("golden/p01_tiny_fixture.ckpt"), path);
  const CliRun run = RunKvrt({"inspect", path, "--json"});
  ASSERT_EQ(run.status, 0) << run.err;
  const Json out = Json::parse(run.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(out.is_discarded()) << run.out;
  // The invalid bytes become U+FFFD; the rest of the name survives.
  EXPECT_NE(out.at("file").get<std::string>().find("model\xef\xbf\xbd"), std::string::npos);
}

}  // namespace
}  // namespace kvrt
