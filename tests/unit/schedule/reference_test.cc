// Tests of the reference evaluator, random inputs and output comparison.
#include "common/ir/reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "tests/unit/schedule/test_workloads.h"

namespace gtco::ir {
namespace {

using schedule::testing::Elementwise;
using schedule::testing::MatMul;
using schedule::testing::RowWorkload;

TEST(RandomInputsTest, DeterministicAndInRange) {
  const Workload w = RowWorkload(AnchorKind::kLayerNorm, 4, 300);
  const auto first = RandomInputs(w, 42);
  const auto second = RandomInputs(w, 42);
  const auto other = RandomInputs(w, 43);
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first, second);
  EXPECT_NE(first, other);
  EXPECT_NE(first[1], first[2]);  // inputs get different streams
  for (float value : first[0]) EXPECT_TRUE(value >= -1.0f && value <= 1.0f);
  for (float value : first[1]) EXPECT_TRUE(value >= 0.5f && value <= 1.5f);
  const double mean = std::accumulate(first[0].begin(), first[0].end(), 0.0) / first[0].size();
  EXPECT_LT(std::fabs(mean), 0.1);
}

TEST(ReferenceTest, MatMulByHand) {
  Workload w = MatMul(1, 2, 2, 3);
  // A = [[1,2,3],[4,5,6]], B = [[1,0],[0,1],[1,1]]
  const std::vector<std::vector<float>> inputs = {{1, 2, 3, 4, 5, 6}, {1, 0, 0, 1, 1, 1}};
  EXPECT_EQ(ComputeReference(w, inputs), (std::vector<float>{4, 5, 10, 11}));
  Workload transposed = MatMul(1, 2, 2, 3, /*trans_a=*/true, /*trans_b=*/true);
  // A^T stored [3,2], B^T stored [2,3].
  const std::vector<std::vector<float>> t_inputs = {{1, 4, 2, 5, 3, 6}, {1, 0, 1, 0, 1, 1}};
  EXPECT_EQ(ComputeReference(transposed, t_inputs), (std::vector<float>{4, 5, 10, 11}));
}

TEST(ReferenceTest, BatchedMatMulWithSharedOperand) {
  Workload w = MatMul(2, 1, 1, 2, false, false, /*a_batched=*/true, /*b_batched=*/false);
  const std::vector<std::vector<float>> inputs = {{1, 2, 3, 4}, {10, 100}};
  EXPECT_EQ(ComputeReference(w, inputs), (std::vector<float>{210, 430}));
}

TEST(ReferenceTest, SoftmaxRowsSumToOneAndFollowExp) {
  const Workload w = RowWorkload(AnchorKind::kSoftmax, 3, 5);
  const auto inputs = RandomInputs(w, 1);
  const auto out = ComputeReference(w, inputs);
  for (int row = 0; row < 3; ++row) {
    double sum = 0;
    for (int col = 0; col < 5; ++col) sum += out[row * 5 + col];
    EXPECT_NEAR(sum, 1.0, 1e-6);
    EXPECT_NEAR(out[row * 5 + 1] / out[row * 5],
                std::exp(inputs[0][row * 5 + 1] - inputs[0][row * 5]), 1e-5);
  }
}

TEST(ReferenceTest, LayerNormNormalizesThenScales) {
  Workload w = RowWorkload(AnchorKind::kLayerNorm, 1, 4);
  const std::vector<std::vector<float>> inputs = {{1, 2, 3, 4}, {1, 1, 2, 2}, {0, 0, 0, 1}};
  const auto out = ComputeReference(w, inputs);
  const double rstd = 1.0 / std::sqrt(1.25 + 1e-5);
  EXPECT_NEAR(out[0], -1.5 * rstd, 1e-6);
  EXPECT_NEAR(out[1], -0.5 * rstd, 1e-6);
  EXPECT_NEAR(out[2], 0.5 * rstd * 2, 1e-6);
  EXPECT_NEAR(out[3], 1.5 * rstd * 2 + 1, 1e-6);
}

TEST(ReferenceTest, ReduceMeanWithEpilogue) {
  Workload w = RowWorkload(AnchorKind::kReduceMean, 2, 3);
  w.epilogue.push_back({EwOp::kMul, {schedule::testing::Acc(), schedule::testing::Const(2)}});
  EXPECT_EQ(ComputeReference(w, {{1, 2, 3, -1, -2, -6}}), (std::vector<float>{4, -6}));
}

TEST(ReferenceTest, ElementwiseBroadcastsLikeNumpy) {
  const Workload w = Elementwise({2, 3});  // relu((x + bias[3]) * scale[2,1] - s[1])
  const std::vector<std::vector<float>> inputs = {{1, 2, 3, 4, 5, 6}, {10, 20, 30}, {1, -1}, {5}};
  EXPECT_EQ(ComputeReference(w, inputs), (std::vector<float>{6, 17, 28, 0, 0, 0}));
}

TEST(CompareOutputsTest, AcceptsWithinToleranceAndNaNs) {
  EXPECT_TRUE(CompareOutputs({1.0f, NAN, 100.0f}, {1.00001f, NAN, 100.01f}, 1e-4, 1e-4).ok());
  EXPECT_TRUE(CompareOutputs({INFINITY}, {INFINITY}, 0, 0).ok());
}

TEST(CompareOutputsTest, ReportsFirstMismatchAndCount) {
  absl::Status status = CompareOutputs({1, 2, 3, 4}, {1, 2.5f, 3, 5}, 1e-4, 1e-4);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("index 1"), std::string::npos) << status;
  EXPECT_NE(status.message().find("expected 2, got 2.5"), std::string::npos) << status;
  EXPECT_NE(status.message().find("2 of 4"), std::string::npos) << status;
  EXPECT_FALSE(CompareOutputs({1}, {NAN}, 1, 1).ok());
  EXPECT_FALSE(CompareOutputs({INFINITY}, {-INFINITY}, 1, 1).ok());
  EXPECT_EQ(CompareOutputs({1, 2}, {1}, 1, 1).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(DefaultToleranceTest, MatMulGrowsWithK) {
  double small_rtol, small_atol, big_rtol, big_atol;
  DefaultTolerance(MatMul(1, 8, 8, 4), &small_rtol, &small_atol);
  DefaultTolerance(MatMul(1, 8, 8, 4096), &big_rtol, &big_atol);
  EXPECT_GT(big_atol, small_atol * 10);
  EXPECT_GT(big_rtol, small_rtol);
  EXPECT_LT(big_rtol, 0.01);
}

}  // namespace
}  // namespace gtco::ir
