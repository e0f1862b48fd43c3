// The jobs table's options column: what earlier servers wrote still reads, what this one writes
// reads back the same, and text that is not options is an error rather than defaults.
#include "server/job_options.h"

#include <gtest/gtest.h>

namespace gtco::server {
namespace {

TEST(JobOptionsTest, ReadsTheLayoutEarlierServersStored) {
  // MessageToJsonString of the former gtco.v1.JobOptions: camelCase, int64 dims as strings.
  absl::StatusOr<JobOptions> options = DecodeJobOptions(
      R"({"roundSize":16,"scheduler":"even","shapes":[{"input":"x","dims":["2","3","224"]}]})");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->round_size, 16);
  EXPECT_EQ(options->scheduler, "even");
  ASSERT_EQ(options->shapes.size(), 1u);
  EXPECT_EQ(options->shapes.at("x"), (std::vector<int64_t>{2, 3, 224}));
  // Field names as in the .proto, and numbers for dims, read too.
  options = DecodeJobOptions(R"({"round_size":4,"shapes":[{"input":"y","dims":[1,8]}]})");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->round_size, 4);
  EXPECT_EQ(options->shapes.at("y"), (std::vector<int64_t>{1, 8}));
}

TEST(JobOptionsTest, WhatIsWrittenReadsBack) {
  JobOptions written;
  written.round_size = 8;
  written.scheduler = "gradient";
  written.shapes["input_ids"] = {1, 128};
  written.shapes["pixels"] = {4, 3, 224, 224};
  const std::string json = EncodeJobOptions(written);
  EXPECT_NE(json.find("\"roundSize\":8"), std::string::npos) << json;
  absl::StatusOr<JobOptions> read = DecodeJobOptions(json);
  ASSERT_TRUE(read.ok()) << read.status() << " in " << json;
  EXPECT_EQ(read->round_size, 8);
  EXPECT_EQ(read->scheduler, "gradient");
  EXPECT_EQ(read->shapes, written.shapes);
  EXPECT_EQ(DecodeJobOptions(EncodeJobOptions(JobOptions()))->round_size, 0);
}

TEST(JobOptionsTest, ThePlansChoicesReadBackAndAMalformedPlanIsAnError) {
  JobOptions written;
  onnx::PlanChoice choice;
  choice.description = "attention 12x197x197x64 scale=0.125";
  choice.instances = 12;
  choice.alternatives = {
      {"fused attention", {{"cpu-attn", 1}}},
      {"unfused attention", {{"cpu-mm1", 1}, {"cpu-softmax", 1}, {"cpu-mm2", 2}}}};
  written.plan = {choice};
  absl::StatusOr<JobOptions> read = DecodeJobOptions(EncodeJobOptions(written));
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->plan.size(), 1u);
  EXPECT_EQ(read->plan[0].description, choice.description);
  EXPECT_EQ(read->plan[0].instances, 12);
  ASSERT_EQ(read->plan[0].alternatives.size(), 2u);
  EXPECT_EQ(read->plan[0].alternatives[1].name, "unfused attention");
  EXPECT_EQ(read->plan[0].alternatives[1].workloads, choice.alternatives[1].workloads);
  // Jobs stored before plans have none; a plan that is not one is an error, not dropped.
  EXPECT_TRUE(DecodeJobOptions(R"({"roundSize":4})")->plan.empty());
  for (const char* bad :
       {R"({"plan":{}})", R"({"plan":[{"description":"a","instances":0,"alternatives":[]}]})",
        R"({"plan":[{"description":"a","instances":1,"alternatives":[{"name":"x"}]}]})",
        R"({"plan":[{"description":"a","instances":1,"alternatives":[{"name":"x",)"
        R"("workloads":[{"key":"k","count":-1}]}]}]})"}) {
    absl::StatusOr<JobOptions> decoded = DecodeJobOptions(bad);
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(decoded.status().message().find("plan"), std::string::npos) << bad;
  }
}

TEST(JobOptionsTest, AnOutOfRangeRoundSizeKeepsTheOtherOptions) {
  // A non-positive round size always meant "the server's default"; the scheduler stays.
  absl::StatusOr<JobOptions> options = DecodeJobOptions(R"({"roundSize":-3,"scheduler":"even"})");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->round_size, 0);
  EXPECT_EQ(options->scheduler, "even");
}

TEST(JobOptionsTest, TextThatIsNotOptionsIsInvalid) {
  for (const char* bad :
       {"not json", "[1,2]", R"({"roundSize":"eight"})", R"({"roundSize":1.5})",
        R"({"roundSize":1e20})", R"({"scheduler":3})", R"({"shapes":{"input":"x"}})",
        R"({"shapes":[{"dims":["1"]}]})", R"({"shapes":[{"input":"x","dims":["a"]}]})"}) {
    EXPECT_EQ(DecodeJobOptions(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace gtco::server
