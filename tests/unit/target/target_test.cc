// Targets are parsed once, at the edges (command line, protocol, database), and named back the
// same way; hardware presets carry their target.
#include "common/target/target.h"

#include <gtest/gtest.h>

namespace gtco::target {
namespace {

TEST(TargetTest, ParsesAndNamesBothTargets) {
  for (Target target : {Target::kCpu, Target::kCuda}) {
    absl::StatusOr<Target> parsed = ParseTarget(TargetName(target));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, target);
  }
  EXPECT_STREQ(TargetName(Target::kCpu), "cpu");
  EXPECT_STREQ(TargetName(Target::kCuda), "cuda");
}

TEST(TargetTest, UnknownNamesAreInvalidWithWhatIsExpected) {
  for (const char* name : {"tpu", "", "CPU", "cuda "}) {
    absl::StatusOr<Target> parsed = ParseTarget(name);
    ASSERT_FALSE(parsed.ok()) << name;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find(std::string("unknown target '") + name + "'"),
              std::string::npos)
        << parsed.status();
    EXPECT_NE(parsed.status().message().find("expected 'cpu' or 'cuda'"), std::string::npos);
  }
}

TEST(TargetTest, PresetsAndTheHostCarryTheirTarget) {
  EXPECT_EQ(CudaArchPreset(90).target, Target::kCuda);
  EXPECT_EQ(DetectHostCpu().target, Target::kCpu);
  EXPECT_EQ(HardwareInfo().target, Target::kCpu);
}

}  // namespace
}  // namespace gtco::target
