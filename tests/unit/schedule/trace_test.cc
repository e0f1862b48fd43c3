// Tests of the schedule trace text form.
#include "common/schedule/trace.h"

#include <gtest/gtest.h>

namespace gtco::schedule {
namespace {

TEST(TraceTest, PrintsCanonicalText) {
  Trace trace{"mm_tiled/v1", {{"mc", 64}, {"nc", 256}, {"kc", 128}, {"mr", 4}}};
  EXPECT_EQ(trace.ToString(), "mm_tiled/v1;mc=64;nc=256;kc=128;mr=4");
}

TEST(TraceTest, RoundTripsThroughText) {
  const std::string text =
      "mm_tiled/v1;mc=64;nc=256;kc=128;mr=4;nr=2;vw=16;par=1;order=0;unroll_k=4";
  absl::StatusOr<Trace> trace = Trace::Parse(text);
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(trace->sketch, "mm_tiled/v1");
  ASSERT_EQ(trace->decisions.size(), 9u);
  EXPECT_EQ(trace->decisions[5], std::make_pair(std::string("vw"), int64_t{16}));
  EXPECT_EQ(trace->ToString(), text);
}

TEST(TraceTest, ParsesSketchWithoutDecisionsAndNegativeValues) {
  absl::StatusOr<Trace> bare = Trace::Parse("ew_flat/v1");
  ASSERT_TRUE(bare.ok());
  EXPECT_TRUE(bare->decisions.empty());
  absl::StatusOr<Trace> negative = Trace::Parse("x/v2;a=-3");
  ASSERT_TRUE(negative.ok());
  EXPECT_EQ(negative->Get("a"), -3);
}

TEST(TraceTest, GetFindsDecisionsByName) {
  Trace trace{"softmax_rows/v1", {{"vw", 8}, {"unroll", 2}}};
  EXPECT_EQ(trace.Get("unroll"), 2);
  EXPECT_EQ(trace.Get("vw"), 8);
  EXPECT_FALSE(trace.Get("par").has_value());
}

TEST(TraceTest, RejectsMalformedText) {
  for (const char* text : {"", ";mc=1", "mm_tiled/v1;mc", "mm_tiled/v1;mc=abc", "mm_tiled/v1;mc=",
                           "mm_tiled/v1;Mc=1", "mm_tiled/v1;mc=1;mc=2", "mm tiled;mc=1",
                           "mm_tiled/v1;mc=1;", "mm_tiled/v1;mc=99999999999999999999"}) {
    absl::StatusOr<Trace> trace = Trace::Parse(text);
    EXPECT_FALSE(trace.ok()) << text;
    if (!trace.ok()) EXPECT_EQ(trace.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
}

TEST(TraceTest, EqualityComparesSketchAndDecisions) {
  Trace a{"s/v1", {{"x", 1}}};
  Trace b{"s/v1", {{"x", 1}}};
  Trace c{"s/v1", {{"x", 2}}};
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

}  // namespace
}  // namespace gtco::schedule
