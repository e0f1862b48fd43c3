// Conv workloads: canonical text round trip, key stability, validation errors, the implicit-GEMM
// view and the reference on a case small enough to check by hand.
#include <gtest/gtest.h>

#include "common/ir/conv.h"
#include "common/ir/reference.h"

namespace gtco::ir {
namespace {

ConvParams Params() {
  ConvParams p;
  p.batch = 2;
  p.in_channels = 6;
  p.in_h = 9;
  p.in_w = 7;
  p.out_channels = 4;
  p.kernel_h = 3;
  p.kernel_w = 2;
  p.stride_h = 2;
  p.stride_w = 1;
  p.pad_top = 1;
  p.pad_left = 0;
  p.pad_bottom = 2;
  p.pad_right = 1;
  p.dilation_h = 2;
  p.groups = 2;
  return p;
}

TEST(ConvWorkloadTest, CanonicalTextRoundTripsAndKeysDifferByParams) {
  Workload w = MakeConvWorkload(Params());
  ASSERT_TRUE(w.Validate().ok()) << w.Validate();
  // OH = (9 + 3 - 2*2 - 1) / 2 + 1 = 4; OW = (7 + 1 - 1 - 1) / 1 + 1 = 7.
  EXPECT_EQ(w.output.shape, (std::vector<int64_t>{2, 4, 4, 7}));
  EXPECT_EQ(w.inputs[1].shape, (std::vector<int64_t>{4, 3, 3, 2}));
  absl::StatusOr<Workload> parsed = ParseWorkload(w.CanonicalString());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->CanonicalString(), w.CanonicalString());
  EXPECT_EQ(parsed->Key(), w.Key());
  EXPECT_EQ(w.Key().rfind("conv-", 0), 0u);
  ConvParams other = Params();
  other.pad_bottom = 1;  // same output size (integer division), different math at the border
  EXPECT_NE(MakeConvWorkload(other).Key(), w.Key());
  EXPECT_EQ(w.Flops(), 2 * 2 * 4 * 4 * 7 * 3 * 3 * 2);
  EXPECT_EQ(ConvSummary(w), "conv 2x6x9x7 k4 3x2 s2,1 p1,0,2,1 d2,1 /g2");
}

TEST(ConvWorkloadTest, ValidationNamesWhatIsWrong) {
  ConvParams bad_groups = Params();
  bad_groups.groups = 4;  // does not divide 6 input channels
  Workload w = MakeConvWorkload(bad_groups);
  EXPECT_NE(w.Validate().message().find("groups 4"), std::string::npos) << w.Validate();
  ConvParams too_big = Params();
  too_big.kernel_h = 9;
  too_big.dilation_h = 2;  // dilated kernel spans 17 rows of a 12-row padded image
  EXPECT_NE(MakeConvWorkload(too_big).Validate().message().find("does not fit"),
            std::string::npos);
  Workload wrong_w = MakeConvWorkload(Params());
  wrong_w.inputs[1].shape = {4, 6, 3, 2};
  EXPECT_NE(wrong_w.Validate().message().find("weights W"), std::string::npos);
  EXPECT_FALSE(ParseWorkload("gtco-workload v1\nanchor conv\nconv n=1 pads=1,2\n").ok());
}

TEST(ConvWorkloadTest, GemmViewAndReference) {
  const MatMulParams g = ConvGemmView(Params());
  EXPECT_EQ(g.batch, 4);   // images x groups
  EXPECT_EQ(g.m, 2);       // output channels per group
  EXPECT_EQ(g.n, 28);      // OH * OW
  EXPECT_EQ(g.k, 18);      // 3 channels x 3 x 2
  // 1 channel 3x3 image, 2x2 kernel of ones, pad 1 on every side: each output sums the image
  // values under the window.
  ConvParams p;
  p.in_h = p.in_w = 3;
  p.kernel_h = p.kernel_w = 2;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w = {1, 1, 1, 1};
  std::vector<float> out(16);
  ConvReference(p, x, w, 0, 1, out.data());
  EXPECT_EQ(out, (std::vector<float>{1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9}));
  Workload conv = MakeConvWorkload(p);
  EXPECT_EQ(ComputeReference(conv, {x, w}), out);
}

}  // namespace
}  // namespace gtco::ir
