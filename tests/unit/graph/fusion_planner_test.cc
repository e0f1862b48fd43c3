// Tests for the fusion planner on hand-built graphs: region growth, escapes, canonical shapes.
#include "common/graph/fusion_planner.h"

#include "common/graph/constant_folding.h"
#include "common/graph/op_support.h"
#include "gtest/gtest.h"
#include "tests/unit/graph/test_graphs.h"

namespace gtco::graph {
namespace {

using namespace ::gtco::graph::testing;  // NOLINT(build/namespaces)
using ir::AnchorKind;
using ir::EwOp;
using ir::Operand;

/// Builds a graph; node outputs get their shapes from the shape functions (as after import).
Graph Build(std::vector<Tensor> tensors, std::vector<Node> nodes,
            std::vector<std::string> outputs) {
  Graph graph;
  graph.opset = 17;
  for (Tensor& tensor : tensors) {
    if (!tensor.is_constant) graph.inputs.push_back(tensor.name);
    graph.SetTensor(std::move(tensor));
  }
  for (Node& node : nodes) {
    for (const std::string& out : node.outputs) graph.SetTensor(Unshaped(out));
    graph.nodes.push_back(std::move(node));
  }
  graph.outputs = std::move(outputs);
  absl::Status folded = FoldConstants(graph);  // also completes shapes
  EXPECT_TRUE(folded.ok()) << folded;
  absl::Status supported = CheckSupportedOps(graph);
  EXPECT_TRUE(supported.ok()) << supported;
  return graph;
}

std::vector<PlannedWorkload> Plan(const Graph& graph) {
  auto planned = PlanWorkloads(graph);
  EXPECT_TRUE(planned.ok()) << planned.status();
  return planned.ok() ? *planned : std::vector<PlannedWorkload>{};
}

std::vector<EwOp> Ops(const ir::Workload& workload) {
  std::vector<EwOp> ops;
  for (const auto& instr : workload.epilogue) ops.push_back(instr.op);
  return ops;
}

/// x[4,8] @ w[8,16] + b[16] -> h; r = relu(h); out = h + r, with `outputs` as graph outputs.
Graph MlpResidual(const std::string& prefix, std::vector<std::string> outputs) {
  return Build(
      {Activation(prefix + "x", {4, 8}), Weights(prefix + "w", {8, 16}),
       Weights(prefix + "b", {16})},
      {MakeNode("MatMul", prefix + "mm", {prefix + "x", prefix + "w"}, {prefix + "m"}),
       MakeNode("Add", prefix + "bias", {prefix + "b", prefix + "m"}, {prefix + "h"}),
       MakeNode("Relu", prefix + "relu", {prefix + "h"}, {prefix + "r"}),
       MakeNode("Add", prefix + "residual", {prefix + "h", prefix + "r"}, {prefix + "out"})},
      std::move(outputs));
}

TEST(FusionPlannerTest, WholeChainFusesWhenOnlyTheLastTensorEscapes) {
  std::vector<PlannedWorkload> planned = Plan(MlpResidual("", {"out"}));
  ASSERT_EQ(planned.size(), 1u);
  const ir::Workload& w = planned[0].workload;
  EXPECT_EQ(w.anchor, AnchorKind::kMatMul);
  EXPECT_EQ(Ops(w), (std::vector<EwOp>{EwOp::kAdd, EwOp::kRelu, EwOp::kAdd}));
  EXPECT_EQ(planned[0].node_names, (std::vector<std::string>{"mm", "bias", "relu", "residual"}));
  ASSERT_EQ(w.inputs.size(), 3u);
  EXPECT_EQ(w.inputs[2].shape, (std::vector<int64_t>{16}));  // bias as last-dim vector
  // bias + acc is canonicalized to acc + bias.
  EXPECT_EQ(w.epilogue[0].args[0].kind, Operand::Kind::kAcc);
  EXPECT_EQ(w.epilogue[0].args[1].kind, Operand::Kind::kInput);
}

TEST(FusionPlannerTest, RegionIsTrimmedUntilOneTensorEscapes) {
  // h is also a graph output: the region stops at h; relu + residual form an anchorless chain.
  std::vector<PlannedWorkload> planned = Plan(MlpResidual("", {"h", "out"}));
  ASSERT_EQ(planned.size(), 2u);
  EXPECT_EQ(planned[0].node_names, (std::vector<std::string>{"mm", "bias"}));
  const ir::Workload& chain = planned[1].workload;
  EXPECT_EQ(chain.anchor, AnchorKind::kNone);
  EXPECT_EQ(planned[1].node_names, (std::vector<std::string>{"relu", "residual"}));
  EXPECT_EQ(Ops(chain), (std::vector<EwOp>{EwOp::kRelu, EwOp::kAdd}));
  EXPECT_EQ(chain.output.shape, (std::vector<int64_t>{4, 16}));
  EXPECT_TRUE(chain.Validate().ok());
}

TEST(FusionPlannerTest, KeysDoNotDependOnNames) {
  std::vector<PlannedWorkload> first = Plan(MlpResidual("", {"out"}));
  std::vector<PlannedWorkload> second =
      Plan(MlpResidual("encoder.layer7/", {"encoder.layer7/out"}));
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(first[0].workload.Key(), second[0].workload.Key());
  EXPECT_EQ(first[0].workload.CanonicalString().find("mm"), std::string::npos);
}

TEST(FusionPlannerTest, InputsDependingOnTheAnchorAreNotAbsorbed) {
  Graph graph = Build({Activation("x", {4, 4}), Weights("w", {4, 4})},
                      {MakeNode("MatMul", "mm", {"x", "w"}, {"m"}),
                       MakeNode("Transpose", "t", {"m"}, {"mt"}, {{"perm", IntsAttr({1, 0})}}),
                       MakeNode("Add", "sym", {"m", "mt"}, {"y"})},
                      {"y"});
  std::vector<PlannedWorkload> planned = Plan(graph);
  ASSERT_EQ(planned.size(), 2u);
  EXPECT_TRUE(planned[0].workload.epilogue.empty());
  EXPECT_EQ(planned[1].workload.anchor, AnchorKind::kNone);
  EXPECT_EQ(planned[1].node_names, (std::vector<std::string>{"sym"}));
}

TEST(FusionPlannerTest, ColumnBroadcastStaysOutOfAnchorButFusesAsChain) {
  Graph graph = Build({Activation("x", {4, 8}), Weights("w", {8, 16}), Weights("col", {4, 1})},
                      {MakeNode("MatMul", "mm", {"x", "w"}, {"m"}),
                       MakeNode("Mul", "scale_rows", {"m", "col"}, {"y"})},
                      {"y"});
  std::vector<PlannedWorkload> planned = Plan(graph);
  ASSERT_EQ(planned.size(), 2u);
  EXPECT_TRUE(planned[0].workload.epilogue.empty());
  const ir::Workload& chain = planned[1].workload;
  EXPECT_EQ(chain.anchor, AnchorKind::kNone);
  ASSERT_EQ(chain.inputs.size(), 2u);
  EXPECT_EQ(chain.inputs[1].shape, (std::vector<int64_t>{4, 1}));
}

TEST(FusionPlannerTest, ScalarConstantsBecomeImmediates) {
  Graph graph = Build(
      {Activation("q", {2, 5, 8}), Activation("k", {2, 8, 5}), FloatConstant("scale", {}, {8.0})},
      {MakeNode("MatMul", "scores", {"q", "k"}, {"s"}),
       MakeNode("Div", "scale_div", {"s", "scale"}, {"y"})},
      {"y"});
  std::vector<PlannedWorkload> planned = Plan(graph);
  ASSERT_EQ(planned.size(), 1u);
  const ir::Workload& w = planned[0].workload;
  EXPECT_EQ(w.matmul.batch, 2);
  EXPECT_TRUE(w.matmul.a_batched && w.matmul.b_batched);
  ASSERT_EQ(w.epilogue.size(), 1u);
  EXPECT_EQ(w.epilogue[0].args[1].kind, Operand::Kind::kConst);
  EXPECT_EQ(w.epilogue[0].args[1].value, 8.0f);
  EXPECT_EQ(w.inputs.size(), 2u);
}

TEST(FusionPlannerTest, MatMulCanonicalShapes) {
  struct Case {
    std::vector<int64_t> a, b;
    int64_t batch, m;
    bool a_batched, b_batched;
  };
  for (const Case& c :
       {Case{{2, 3, 5, 8}, {8, 7}, 1, 30, false, false},
        Case{{2, 5, 8}, {2, 8, 7}, 2, 5, true, true}, Case{{5, 8}, {3, 8, 7}, 3, 5, false, true},
        Case{{3, 1, 5, 8}, {1, 1, 8, 7}, 1, 15, false, false}}) {
    Graph graph = Build({Activation("a", c.a), Activation("b", c.b)},
                        {MakeNode("MatMul", "mm", {"a", "b"}, {"y"})}, {"y"});
    std::vector<PlannedWorkload> planned = Plan(graph);
    ASSERT_EQ(planned.size(), 1u);
    const ir::MatMulParams& p = planned[0].workload.matmul;
    EXPECT_EQ(p.batch, c.batch);
    EXPECT_EQ(p.m, c.m);
    EXPECT_EQ(p.n, 7);
    EXPECT_EQ(p.k, 8);
    EXPECT_EQ(p.a_batched, c.a_batched);
    EXPECT_EQ(p.b_batched, c.b_batched);
    EXPECT_EQ(planned[0].workload.output.shape, (std::vector<int64_t>{c.batch, c.m, 7}));
  }
}

TEST(FusionPlannerTest, GemmAlphaBetaAndBiasBecomeEpilogue) {
  Graph graph = Build({Activation("a", {8, 4}), Weights("w", {16, 8}), Weights("c", {16})},
                      {MakeNode("Gemm", "gemm", {"a", "w", "c"}, {"y"},
                                {{"transA", IntAttr(1)},
                                 {"transB", IntAttr(1)},
                                 {"alpha", FloatAttr(2.0f)},
                                 {"beta", FloatAttr(0.5f)}})},
                      {"y"});
  std::vector<PlannedWorkload> planned = Plan(graph);
  ASSERT_EQ(planned.size(), 1u);
  const ir::Workload& w = planned[0].workload;
  EXPECT_TRUE(w.matmul.trans_a && w.matmul.trans_b);
  EXPECT_EQ(w.matmul.m, 4);
  EXPECT_EQ(w.matmul.k, 8);
  EXPECT_EQ(w.matmul.n, 16);
  EXPECT_EQ(w.inputs[0].shape, (std::vector<int64_t>{1, 8, 4}));
  EXPECT_EQ(w.inputs[2].shape, (std::vector<int64_t>{16}));
  EXPECT_EQ(Ops(w), (std::vector<EwOp>{EwOp::kMul, EwOp::kMul, EwOp::kAdd}));
  EXPECT_EQ(w.epilogue[0].args[1].value, 2.0f);
  EXPECT_EQ(w.epilogue[1].args[1].value, 0.5f);
  EXPECT_TRUE(w.Validate().ok()) << w.Validate();
}

TEST(FusionPlannerTest, RowAnchorsUseRowsAndCols) {
  Graph graph = Build({Activation("x", {2, 3, 10}), IntConstant("axes", {1}, {-1})},
                      {MakeNode("ReduceMean", "mean", {"x"}, {"mu"}, {{"axes", IntsAttr({-1})}}),
                       MakeNode("Sub", "center", {"x", "mu"}, {"centered"}),
                       MakeNode("Softmax", "softmax", {"centered"}, {"p"}, {{"axis", IntAttr(-1)}}),
                       MakeNode("Mul", "double", {"p", "p"}, {"y"})},
                      {"y"});
  std::vector<PlannedWorkload> planned = Plan(graph);
  ASSERT_EQ(planned.size(), 3u);
  const ir::Workload& mean = planned[0].workload;
  EXPECT_EQ(mean.anchor, AnchorKind::kReduceMean);
  EXPECT_EQ(mean.row.rows, 6);
  EXPECT_EQ(mean.row.cols, 10);
  EXPECT_EQ(mean.output.shape, (std::vector<int64_t>{6, 1}));
  // x - mean broadcasts the mean over columns: an anchorless chain, not the mean's epilogue.
  EXPECT_EQ(planned[1].workload.anchor, AnchorKind::kNone);
  EXPECT_EQ(planned[1].node_names, (std::vector<std::string>{"center"}));
  EXPECT_EQ(planned[2].workload.anchor, AnchorKind::kSoftmax);
  EXPECT_EQ(planned[2].node_names, (std::vector<std::string>{"softmax", "double"}));
}

TEST(FusionPlannerTest, SoftmaxOverNonLastAxisIsUnimplemented) {
  Graph graph =
      Build({Activation("x", {2, 3, 10})},
            {MakeNode("Softmax", "channel_softmax", {"x"}, {"y"}, {{"axis", IntAttr(1)}})}, {"y"});
  auto planned = PlanWorkloads(graph);
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(planned.status().message().find("'channel_softmax'"), std::string::npos)
      << planned.status();
}

// Found by fuzz_rpc_requests: a Gemm whose bias C does not broadcast to [M, N] (which ONNX's
// checker lets through) made the planner build an invalid workload (INTERNAL); it is a bad model.
TEST(FusionPlannerTest, GemmBiasThatDoesNotBroadcastIsInvalidArgument) {
  Graph graph;
  graph.opset = 17;
  graph.SetTensor(Activation("x", {4, 8}));
  graph.inputs.push_back("x");
  graph.SetTensor(Weights("w", {8, 16}));
  graph.SetTensor(Weights("c", {64}));
  graph.SetTensor(Activation("y", {4, 16}));
  graph.nodes.push_back(MakeNode("Gemm", "fc2", {"x", "w", "c"}, {"y"}));
  graph.outputs = {"y"};
  absl::StatusOr<std::vector<PlannedWorkload>> planned = PlanWorkloads(graph);
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.status().code(), absl::StatusCode::kInvalidArgument) << planned.status();
  EXPECT_NE(planned.status().message().find("'fc2'"), std::string::npos) << planned.status();
  EXPECT_NE(planned.status().message().find("does not broadcast"), std::string::npos);
}

}  // namespace
}  // namespace gtco::graph
