// Tests for constant folding, shape completion and the op support check.
#include "common/graph/constant_folding.h"

#include <cmath>

#include "common/graph/op_support.h"
#include "common/graph/shape_inference.h"
#include "gtest/gtest.h"
#include "tests/unit/graph/test_graphs.h"

namespace gtco::graph {
namespace {

using namespace ::gtco::graph::testing;  // NOLINT(build/namespaces)

/// Folds `graph` and returns the constant `name`, failing the test if it is not constant.
const Tensor& FoldAndGet(Graph& graph, const std::string& name) {
  absl::Status folded = FoldConstants(graph);
  EXPECT_TRUE(folded.ok()) << folded;
  EXPECT_TRUE(graph.IsConstant(name)) << name;
  return graph.tensor(name);
}

/// A graph whose only output is `output`, computed by `nodes` over `tensors`.
Graph MakeGraph(std::vector<Tensor> tensors, std::vector<Node> nodes, const std::string& output) {
  Graph graph;
  for (Tensor& tensor : tensors) {
    if (!tensor.is_constant && tensor.has_shape && graph.inputs.empty()) {
      graph.inputs.push_back(tensor.name);
    }
    graph.SetTensor(std::move(tensor));
  }
  for (Node& node : nodes) {
    for (const std::string& out : node.outputs) {
      if (!graph.HasTensor(out)) graph.SetTensor(Unshaped(out));
    }
    graph.nodes.push_back(std::move(node));
  }
  graph.outputs = {output};
  return graph;
}

// Found by fuzz_onnx_import: a reshape target whose dims multiply past 2^63 overflowed int64
// (undefined behaviour) during shape inference; now it is a shape error naming the node.
TEST(ConstantFoldingTest, OverflowingReshapeTargetIsAShapeError) {
  Graph graph = MakeGraph(
      {Activation("x", {2, 3, 4}),
       IntConstant("target", {3}, {128, 216172782113783809LL, 3})},
      {MakeNode("Reshape", "reshape", {"x", "target"}, {"y"})}, "y");
  absl::StatusOr<std::vector<int64_t>> shape = ReshapeLikeShape(graph.nodes[0], graph);
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.status().message().find("64 bits"), std::string::npos) << shape.status();
  EXPECT_NE(shape.status().message().find("reshape"), std::string::npos) << shape.status();
}

TEST(ConstantFoldingTest, ShapeChainCollapsesIntoReshapeTarget) {
  Graph graph = MakeGraph(
      {Activation("x", {2, 3, 4}), IntConstant("zero", {}, {0}), IntConstant("minus1", {1}, {-1}),
       IntConstant("axes0", {1}, {0})},
      {MakeNode("Shape", "shape", {"x"}, {"s"}),
       MakeNode("Gather", "gather", {"s", "zero"}, {"batch"}, {{"axis", IntAttr(0)}}),
       MakeNode("Unsqueeze", "unsqueeze", {"batch", "axes0"}, {"batch1"}),
       MakeNode("Concat", "concat", {"batch1", "minus1"}, {"target"}, {{"axis", IntAttr(0)}}),
       MakeNode("Reshape", "reshape", {"x", "target"}, {"y"})},
      "y");
  const Tensor& target = FoldAndGet(graph, "target");
  EXPECT_EQ(target.int_data, (std::vector<int64_t>{2, -1}));
  ASSERT_EQ(graph.nodes.size(), 1u);
  EXPECT_EQ(graph.nodes[0].name, "reshape");
  // ONNX left y without a shape; folding completes it from the now-constant target.
  ASSERT_TRUE(graph.tensor("y").has_shape);
  EXPECT_EQ(graph.tensor("y").shape, (std::vector<int64_t>{2, 12}));
}

TEST(ConstantFoldingTest, SliceFollowsOnnxClamping) {
  std::vector<double> ramp;
  for (int i = 0; i < 10; ++i) ramp.push_back(i);
  Graph graph = MakeGraph(
      {FloatConstant("data", {10}, ramp), IntConstant("start_tail", {1}, {-3}),
       IntConstant("end_max", {1}, {kInt64Max}), IntConstant("start_back", {1}, {8}),
       IntConstant("end_min", {1}, {kInt64Min}), IntConstant("axes", {1}, {0}),
       IntConstant("step_back", {1}, {-2})},
      {MakeNode("Slice", "tail", {"data", "start_tail", "end_max"}, {"tail_out"}),
       MakeNode("Slice", "back", {"data", "start_back", "end_min", "axes", "step_back"},
                {"back_out"}),
       MakeNode("Concat", "join", {"tail_out", "back_out"}, {"joined"}, {{"axis", IntAttr(0)}})},
      "joined");
  const Tensor& joined = FoldAndGet(graph, "joined");
  EXPECT_EQ(joined.float_data, (std::vector<double>{7, 8, 9, 8, 6, 4, 2, 0}));
  EXPECT_EQ(graph.tensor("tail_out").shape, (std::vector<int64_t>{3}));
}

TEST(ConstantFoldingTest, TorchExpandPatternFolds) {
  // torch exports `t.expand(x.shape[0], -1, -1)` as this ConstantOfShape/Equal/Where chain.
  Attribute one;
  one.kind = Attribute::Kind::kTensor;
  one.tensor.push_back(IntConstant("one", {1}, {1}));
  Graph graph =
      MakeGraph({IntConstant("requested", {3}, {2, -1, -1}), IntConstant("len", {1}, {3}),
                 IntConstant("minus1", {}, {-1}), FloatConstant("token", {1, 1, 4}, {1, 2, 3, 4})},
                {MakeNode("ConstantOfShape", "ones", {"len"}, {"ones_out"}, {{"value", one}}),
                 MakeNode("Mul", "neg", {"ones_out", "minus1"}, {"negs"}),
                 MakeNode("Equal", "eq", {"requested", "negs"}, {"is_keep"}),
                 MakeNode("Where", "where", {"is_keep", "ones_out", "requested"}, {"expand_shape"}),
                 MakeNode("Expand", "expand", {"token", "expand_shape"}, {"tokens"})},
                "tokens");
  const Tensor& tokens = FoldAndGet(graph, "tokens");
  EXPECT_EQ(graph.tensor("expand_shape").int_data, (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(tokens.shape, (std::vector<int64_t>{2, 1, 4}));
  EXPECT_EQ(tokens.float_data, (std::vector<double>{1, 2, 3, 4, 1, 2, 3, 4}));
  EXPECT_TRUE(graph.nodes.empty());
}

TEST(ConstantFoldingTest, TransposeCastRangeGatherAndArithmetic) {
  Graph graph = MakeGraph(
      {FloatConstant("m", {2, 3}, {0, 1, 2, 3, 4, 5}), IntConstant("start", {}, {0}),
       IntConstant("limit", {}, {5}), IntConstant("delta", {}, {2}), IntConstant("last", {}, {-1}),
       FloatConstant("two", {}, {2.0})},
      {MakeNode("Transpose", "t", {"m"}, {"mt"}, {{"perm", IntsAttr({1, 0})}}),
       MakeNode("Cast", "cast", {"mt"}, {"mt_int"}, {{"to", IntAttr(7)}}),
       MakeNode("Range", "range", {"start", "limit", "delta"}, {"steps"}),
       MakeNode("Gather", "pick", {"mt_int", "last"}, {"last_row"}, {{"axis", IntAttr(0)}}),
       MakeNode("Sqrt", "sqrt", {"two"}, {"root2"}),
       MakeNode("Div", "div", {"m", "root2"}, {"scaled"})},
      "scaled");
  graph.outputs = {"mt_int", "steps", "last_row", "scaled"};
  ASSERT_TRUE(FoldConstants(graph).ok());
  EXPECT_EQ(graph.tensor("mt_int").type, ElemType::kInt64);
  EXPECT_EQ(graph.tensor("mt_int").shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(graph.tensor("mt_int").int_data, (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(graph.tensor("steps").int_data, (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(graph.tensor("last_row").int_data, (std::vector<int64_t>{2, 5}));
  EXPECT_FLOAT_EQ(graph.tensor("scaled").float_data[3], 3.0f / std::sqrt(2.0f));
}

// Newer PyTorch exporters (2.11) write shape checks with Mod: integer Mod takes the divisor's
// sign, fmod=1 the dividend's (C), floats need fmod=1, and a zero divisor is an error.
TEST(ConstantFoldingTest, ModFoldsWithOnnxSigns) {
  Graph graph = MakeGraph(
      {IntConstant("a", {4}, {7, -7, 7, -7}), IntConstant("b", {4}, {3, 3, -3, -3}),
       FloatConstant("x", {2}, {5.5f, -5.5f}), FloatConstant("y", {}, {2.0f})},
      {MakeNode("Mod", "mod", {"a", "b"}, {"python_mod"}),
       MakeNode("Mod", "fmod", {"a", "b"}, {"c_mod"}, {{"fmod", IntAttr(1)}}),
       MakeNode("Mod", "float_fmod", {"x", "y"}, {"float_mod"}, {{"fmod", IntAttr(1)}})},
      "python_mod");
  graph.outputs = {"python_mod", "c_mod", "float_mod"};
  ASSERT_TRUE(FoldConstants(graph).ok());
  EXPECT_EQ(graph.tensor("python_mod").int_data, (std::vector<int64_t>{1, 2, -2, -1}));
  EXPECT_EQ(graph.tensor("c_mod").int_data, (std::vector<int64_t>{1, -1, 1, -1}));
  EXPECT_FLOAT_EQ(graph.tensor("float_mod").float_data[1], -1.5f);

  for (bool float_without_fmod : {true, false}) {
    Graph bad = MakeGraph(
        {FloatConstant("x", {1}, {5.0f}), IntConstant("a", {1}, {5}), IntConstant("zero", {1}, {0})},
        {float_without_fmod ? MakeNode("Mod", "bad_mod", {"x", "x"}, {"r"})
                            : MakeNode("Mod", "bad_mod", {"a", "zero"}, {"r"})},
        "r");
    absl::Status status = FoldConstants(bad);
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.message().find("bad_mod"), std::string::npos) << status;
    EXPECT_NE(status.message().find(float_without_fmod ? "fmod=1" : "by zero"), std::string::npos)
        << status;
  }
}

// Found by fuzzing (tests/fuzz/fuzz_onnx_import): a Transpose perm that is not a permutation
// of the input axes indexed out of range (std::out_of_range escaped from the importer).
TEST(ConstantFoldingTest, TransposeWithABadPermIsAnErrorNotAnException) {
  for (const std::vector<int64_t>& perm :
       std::vector<std::vector<int64_t>>{{0, 1, 2}, {1}, {0, 0}, {-1, 0}, {2, 0}}) {
    Graph runtime = MakeGraph(
        {Activation("x", {2, 3})},
        {MakeNode("Transpose", "t", {"x"}, {"y"}, {{"perm", IntsAttr(perm)}})}, "y");
    absl::StatusOr<std::vector<int64_t>> shape = InferOutputShape(runtime.nodes[0], runtime);
    EXPECT_EQ(shape.status().code(), absl::StatusCode::kInvalidArgument) << perm.size();
    EXPECT_TRUE(FoldConstants(runtime).ok());  // the support check reports the shape later
    EXPECT_FALSE(runtime.tensor("y").has_shape);

    Graph constant = MakeGraph(
        {FloatConstant("m", {2, 3}, {0, 1, 2, 3, 4, 5})},
        {MakeNode("Transpose", "t", {"m"}, {"mt"}, {{"perm", IntsAttr(perm)}})}, "mt");
    EXPECT_EQ(FoldConstants(constant).code(), absl::StatusCode::kInvalidArgument);
  }
}

// Found by fuzzing (tests/fuzz/fuzz_onnx_import): an Expand to a negative dim reserved a
// negative element count (std::length_error escaped), and huge dims overflowed the count.
TEST(ConstantFoldingTest, FoldedShapesWithNegativeOrHugeDimsAreErrors) {
  Graph negative = MakeGraph(
      {FloatConstant("v", {1}, {1.0}), IntConstant("target", {2}, {-5, 3})},
      {MakeNode("Expand", "expand", {"v", "target"}, {"y"})}, "y");
  EXPECT_EQ(FoldConstants(negative).code(), absl::StatusCode::kInvalidArgument);

  const int64_t huge = int64_t{1} << 32;
  Graph overflow = MakeGraph({IntConstant("dims", {3}, {huge, huge, huge})},
                             {MakeNode("ConstantOfShape", "fill", {"dims"}, {"y"})}, "y");
  EXPECT_EQ(FoldConstants(overflow).code(), absl::StatusCode::kUnimplemented);

  Graph large = MakeGraph(  // 2^14 x 2^13 = 2^27 elements, over the folding limit
      {FloatConstant("column", {1 << 14, 1}, std::vector<double>(1 << 14, 1.0)),
       FloatConstant("row", {1, 1 << 13}, std::vector<double>(1 << 13, 2.0))},
      {MakeNode("Mul", "outer", {"column", "row"}, {"y"})}, "y");
  EXPECT_EQ(FoldConstants(large).code(), absl::StatusCode::kUnimplemented);
}

TEST(ConstantFoldingTest, DeadShapeArithmeticIsRemoved) {
  Graph graph = MakeGraph(
      {Activation("x", {2, 3})},
      {MakeNode("Shape", "unused_shape", {"x"}, {"s"}), MakeNode("Relu", "relu", {"x"}, {"y"})},
      "y");
  ASSERT_TRUE(FoldConstants(graph).ok());
  ASSERT_EQ(graph.nodes.size(), 1u);
  EXPECT_EQ(graph.nodes[0].name, "relu");
}

TEST(OpSupportTest, UnsupportedOpIsNamedWithItsNode) {
  Graph graph =
      MakeGraph({Activation("boxes", {1, 10, 4}), Activation("scores", {1, 1, 10})},
                {MakeNode("NonMaxSuppression", "nms_1", {"boxes", "scores"}, {"keep"})}, "keep");
  absl::Status status = CheckSupportedOps(graph);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(status.message(), "unsupported ONNX op 'NonMaxSuppression' at node 'nms_1'");
}

TEST(OpSupportTest, FoldOnlyOpOnRuntimeDataIsUnimplemented) {
  Graph graph = MakeGraph({Activation("dims", {2}, ElemType::kInt64)},
                          {MakeNode("ConstantOfShape", "fill", {"dims"}, {"y"})}, "y");
  graph.inputs = {"dims"};
  ASSERT_TRUE(FoldConstants(graph).ok());
  absl::Status status = CheckSupportedOps(graph);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("'ConstantOfShape' at node 'fill'"), std::string::npos)
      << status;
  EXPECT_NE(status.message().find("'dims'"), std::string::npos) << status;
}

TEST(OpSupportTest, AttentionMaskOpsRunAtRunTimeWithTheirTypesChecked) {
  // DistilBERT's mask: Equal(mask, 0) -> Where(is_pad, -inf, scores), on runtime tensors.
  Graph graph = MakeGraph(
      {Activation("mask", {1, 4}, ElemType::kInt64), Activation("scores", {2, 4, 4}),
       IntConstant("zero", {}, {0}), FloatConstant("low", {}, {-1e30})},
      {MakeNode("Equal", "is_pad", {"mask", "zero"}, {"pad"}),
       MakeNode("Where", "masked", {"pad", "low", "scores"}, {"y"})},
      "y");
  graph.inputs = {"mask", "scores"};
  graph.mutable_tensor("pad").type = ElemType::kBool;
  ASSERT_TRUE(FoldConstants(graph).ok());
  EXPECT_TRUE(CheckSupportedOps(graph).ok()) << CheckSupportedOps(graph);
  // A Where whose condition is not bool is refused at its node.
  Graph bad = MakeGraph({Activation("x", {4}), IntConstant("cond", {4}, {1, 0, 1, 0}),
                         FloatConstant("zeros", {4}, {0, 0, 0, 0})},
                        {MakeNode("Where", "mask_where", {"cond", "x", "zeros"}, {"y"})}, "y");
  bad.inputs = {"x"};
  ASSERT_TRUE(FoldConstants(bad).ok());
  absl::Status status = CheckSupportedOps(bad);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("'Where' at node 'mask_where'"), std::string::npos) << status;
  EXPECT_NE(status.message().find("condition must be bool"), std::string::npos) << status;
}

TEST(OpSupportTest, NonF32ComputeIsUnimplementedNamingDtypeAndNode) {
  Graph graph = MakeGraph({Activation("a", {4, 8}, ElemType::kFloat16), Weights("w", {8, 2})},
                          {MakeNode("MatMul", "half_matmul", {"a", "w"}, {"y"})}, "y");
  graph.mutable_tensor("y") = Activation("y", {4, 2}, ElemType::kFloat16);
  absl::Status status = CheckSupportedOps(graph);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("f16"), std::string::npos) << status;
  EXPECT_NE(status.message().find("'half_matmul'"), std::string::npos) << status;
}

TEST(OpSupportTest, RuntimeCastsToF32AndNothingNarrower) {
  // An attention mask: i64 -> f32 at run time is fine.
  Graph mask =
      MakeGraph({Activation("ids", {4}, ElemType::kInt64)},
                {MakeNode("Cast", "to_float", {"ids"}, {"y"}, {{"to", IntAttr(1)}})}, "y");
  ASSERT_TRUE(FoldConstants(mask).ok());
  EXPECT_TRUE(CheckSupportedOps(mask).ok()) << CheckSupportedOps(mask);
  // f32 -> i64 is not.
  Graph narrowing =
      MakeGraph({Activation("x", {4})},
                {MakeNode("Cast", "to_int", {"x"}, {"y"}, {{"to", IntAttr(7)}})}, "y");
  ASSERT_TRUE(FoldConstants(narrowing).ok());
  absl::Status status = CheckSupportedOps(narrowing);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("'to_int'"), std::string::npos) << status;
  EXPECT_NE(status.message().find("f32 tensor 'x' to ONNX type 7"), std::string::npos) << status;
}

TEST(OpSupportTest, ClassifiesRoles) {
  EXPECT_EQ(RoleOf(MakeNode("MatMul", "n", {}, {})), OpRole::kAnchor);
  EXPECT_EQ(RoleOf(MakeNode("Erf", "n", {}, {})), OpRole::kElementwise);
  EXPECT_EQ(RoleOf(MakeNode("Transpose", "n", {}, {})), OpRole::kData);
  EXPECT_EQ(RoleOf(MakeNode("ConstantOfShape", "n", {}, {})), OpRole::kFoldOnly);
  EXPECT_EQ(RoleOf(MakeNode("Conv", "n", {}, {})), OpRole::kAnchor);
  EXPECT_EQ(RoleOf(MakeNode("TopK", "n", {}, {})), OpRole::kUnsupported);
  Node custom = MakeNode("MatMul", "n", {}, {});
  custom.domain = "com.microsoft";
  EXPECT_EQ(RoleOf(custom), OpRole::kUnsupported);
}

}  // namespace
}  // namespace gtco::graph
