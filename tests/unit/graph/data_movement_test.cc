// SimplifyDataMovement (common/graph/data_movement.h): which copies become free reshapes, which
// scales move past their MatMul and which reshapes sink below element-wise nodes, and where each
// rewrite must not fire.
#include "common/graph/data_movement.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "common/graph/fusion_planner.h"
#include "gtest/gtest.h"
#include "tests/unit/graph/test_graphs.h"

namespace gtco::graph {
namespace {

using testing::Activation;
using testing::FloatConstant;
using testing::IntConstant;
using testing::IntsAttr;
using testing::MakeNode;
using testing::Weights;

const Node* Find(const Graph& graph, const std::string& name) {
  for (const Node& node : graph.nodes) {
    if (node.name == name) return &node;
  }
  return nullptr;
}

int IndexOf(const Graph& graph, const std::string& name) {
  for (int i = 0; i < static_cast<int>(graph.nodes.size()); ++i) {
    if (graph.nodes[i].name == name) return i;
  }
  return -1;
}

/// Every node reads tensors that are graph inputs, constants or written by an earlier node.
void ExpectTopological(const Graph& graph) {
  std::set<std::string> known(graph.inputs.begin(), graph.inputs.end());
  for (const Node& node : graph.nodes) {
    for (const std::string& input : node.inputs) {
      if (input.empty() || graph.IsConstant(input)) continue;
      EXPECT_TRUE(known.count(input)) << node.name << " reads " << input << " before it is written";
    }
    known.insert(node.outputs.begin(), node.outputs.end());
  }
}

TEST(DataMovementTest, TransposeOfUnitAxesOnlyBecomesAReshape) {
  Graph graph;
  graph.SetTensor(Activation("x", {1, 4, 8}));
  graph.SetTensor(Activation("y", {4, 1, 8}));
  graph.SetTensor(Activation("u", {2, 4, 8}));
  graph.SetTensor(Activation("v", {4, 2, 8}));
  graph.inputs = {"x", "u"};
  graph.nodes.push_back(MakeNode("Transpose", "unit", {"x"}, {"y"}, {{"perm", IntsAttr({1, 0, 2})}}));
  graph.nodes.push_back(MakeNode("Transpose", "real", {"u"}, {"v"}, {{"perm", IntsAttr({1, 0, 2})}}));
  graph.outputs = {"y", "v"};
  ASSERT_TRUE(SimplifyDataMovement(graph).ok());
  const Node* unit = Find(graph, "unit");
  ASSERT_NE(unit, nullptr);
  EXPECT_EQ(unit->op_type, "Reshape");
  ASSERT_EQ(unit->inputs.size(), 2u);
  EXPECT_EQ(unit->inputs[0], "x");
  EXPECT_EQ(graph.tensor(unit->inputs[1]).int_data, (std::vector<int64_t>{4, 1, 8}));
  EXPECT_TRUE(unit->attributes.empty());
  // [2, 4, 8] -> [4, 2, 8] moves data: it stays a Transpose.
  EXPECT_EQ(Find(graph, "real")->op_type, "Transpose");
}

TEST(DataMovementTest, PowerOfTwoScaleOfACopyMovesPastItsMatMul) {
  for (const double divisor : {8.0, 3.0}) {
    SCOPED_TRACE(divisor);
    Graph graph;
    graph.SetTensor(Activation("q_heads", {4, 2, 8}));
    graph.SetTensor(Activation("q", {2, 4, 8}));
    graph.SetTensor(Activation("q_scaled", {2, 4, 8}));
    graph.SetTensor(Activation("kt", {2, 8, 4}));
    graph.SetTensor(Activation("scores", {2, 4, 4}));
    graph.SetTensor(FloatConstant("scale", {}, {divisor}));
    graph.inputs = {"q_heads", "kt"};
    graph.nodes.push_back(
        MakeNode("Transpose", "heads", {"q_heads"}, {"q"}, {{"perm", IntsAttr({1, 0, 2})}}));
    graph.nodes.push_back(MakeNode("Div", "div", {"q", "scale"}, {"q_scaled"}));
    graph.nodes.push_back(MakeNode("MatMul", "qk", {"q_scaled", "kt"}, {"scores"}));
    graph.outputs = {"scores"};
    ASSERT_TRUE(SimplifyDataMovement(graph).ok());
    ExpectTopological(graph);
    const Node* qk = Find(graph, "qk");
    const Node* div = Find(graph, "div");
    ASSERT_NE(qk, nullptr);
    ASSERT_NE(div, nullptr);
    if (divisor == 8.0) {
      // Exact in either order: Q K^T / 8, the Div after the MatMul writing the graph output.
      EXPECT_EQ(qk->inputs[0], "q");
      EXPECT_EQ(div->inputs[0], qk->outputs[0]);
      EXPECT_EQ(div->inputs[1], "scale");
      EXPECT_EQ(div->outputs[0], "scores");
      EXPECT_GT(IndexOf(graph, "div"), IndexOf(graph, "qk"));
    } else {
      // Dividing by 3 rounds: the order stays as the model wrote it.
      EXPECT_EQ(qk->inputs[0], "q_scaled");
      EXPECT_EQ(div->outputs[0], "q_scaled");
    }
  }
}

TEST(DataMovementTest, ScaleAlreadyInAnEpilogueStaysWhereItIs) {
  // GELU's final * 0.5 follows element-wise nodes (an epilogue of the matmul before): moving it
  // would only change which kernel computes it.
  Graph graph;
  graph.SetTensor(Activation("x", {4, 8}));
  graph.SetTensor(Activation("h", {4, 8}));
  graph.SetTensor(Activation("half", {4, 8}));
  graph.SetTensor(Activation("y", {4, 8}));
  graph.SetTensor(FloatConstant("c", {}, {0.5}));
  graph.SetTensor(Weights("w", {8, 8}));
  graph.inputs = {"x"};
  graph.nodes.push_back(MakeNode("Relu", "relu", {"x"}, {"h"}));
  graph.nodes.push_back(MakeNode("Mul", "mul", {"h", "c"}, {"half"}));
  graph.nodes.push_back(MakeNode("MatMul", "mm", {"half", "w"}, {"y"}));
  graph.outputs = {"y"};
  ASSERT_TRUE(SimplifyDataMovement(graph).ok());
  EXPECT_EQ(Find(graph, "mm")->inputs[0], "half");
  EXPECT_EQ(Find(graph, "mul")->outputs[0], "half");
}

/// torch's out-projection: MatMul [6, 8] -> Reshape [6, 1, 8] -> Transpose [1, 6, 8] -> residual
/// Add; `extra_reader` makes the MatMul's output read by a second node too.
Graph ResidualAfterReshapes(bool extra_reader) {
  Graph graph;
  graph.SetTensor(Activation("x", {6, 8}));
  graph.SetTensor(Activation("residual", {1, 6, 8}));
  graph.SetTensor(Weights("w", {8, 8}));
  graph.SetTensor(Activation("m", {6, 8}));
  graph.SetTensor(IntConstant("shape", {3}, {6, 1, 8}));
  graph.SetTensor(Activation("r", {6, 1, 8}));
  graph.SetTensor(Activation("t", {1, 6, 8}));
  graph.SetTensor(Activation("sum", {1, 6, 8}));
  graph.inputs = {"x", "residual"};
  graph.nodes.push_back(MakeNode("MatMul", "proj", {"x", "w"}, {"m"}));
  graph.nodes.push_back(MakeNode("Reshape", "reshape", {"m", "shape"}, {"r"}));
  graph.nodes.push_back(MakeNode("Transpose", "transpose", {"r"}, {"t"}, {{"perm", IntsAttr({1, 0, 2})}}));
  graph.nodes.push_back(MakeNode("Add", "add", {"t", "residual"}, {"sum"}));
  graph.outputs = {"sum"};
  if (extra_reader) {
    graph.SetTensor(Activation("m2", {6, 8}));
    graph.nodes.push_back(MakeNode("Relu", "other", {"m"}, {"m2"}));
    graph.outputs.push_back("m2");
  }
  return graph;
}

TEST(DataMovementTest, ResidualAddBehindReshapesBecomesTheMatMulsEpilogue) {
  Graph graph = ResidualAfterReshapes(false);
  ASSERT_TRUE(SimplifyDataMovement(graph).ok());
  ExpectTopological(graph);
  const Node* add = Find(graph, "add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->inputs[0], "m");
  EXPECT_EQ(graph.tensor(add->inputs[1]).shape, (std::vector<int64_t>{6, 8}));
  EXPECT_EQ(graph.tensor(add->outputs[0]).shape, (std::vector<int64_t>{6, 8}));
  // The graph output keeps its name and shape, written by a reshape of the sum.
  EXPECT_EQ(graph.outputs, (std::vector<std::string>{"sum"}));
  EXPECT_EQ(graph.tensor("sum").shape, (std::vector<int64_t>{1, 6, 8}));
  int reshapes = 0, transposes = 0;
  for (const Node& node : graph.nodes) {
    reshapes += node.op_type == "Reshape";
    transposes += node.op_type == "Transpose";
  }
  EXPECT_EQ(transposes, 0);
  EXPECT_EQ(reshapes, 2);  // the residual's and the sum's, both free aliases
  // Planned: one workload, the matmul with the add as its epilogue.
  absl::StatusOr<std::vector<PlannedWorkload>> planned = PlanWorkloads(graph);
  ASSERT_TRUE(planned.ok()) << planned.status();
  ASSERT_EQ(planned->size(), 1u);
  EXPECT_EQ((*planned)[0].node_names, (std::vector<std::string>{"proj", "add"}));
}

TEST(DataMovementTest, ReshapeOfAMatMulOutputReadElsewhereDoesNotSink) {
  Graph graph = ResidualAfterReshapes(true);
  ASSERT_TRUE(SimplifyDataMovement(graph).ok());
  ExpectTopological(graph);
  // The two reshapes collapse into one (the transpose only moved a unit axis), but the add stays
  // on the reshaped tensor: the MatMul's output escapes to "other" anyway.
  const Node* add = Find(graph, "add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->inputs[1], "residual");
  EXPECT_EQ(graph.tensor(add->inputs[0]).shape, (std::vector<int64_t>{1, 6, 8}));
  EXPECT_EQ(Find(graph, "transpose")->op_type, "Reshape");
}

}  // namespace
}  // namespace gtco::graph
