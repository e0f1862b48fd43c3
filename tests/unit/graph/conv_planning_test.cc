// Convolutional graphs through the graph passes: BatchNormalization folded into its Conv (or into
// a per-channel Mul + Add), Conv planned as a conv workload with its bias, residual and ReLU
// fused, GlobalAveragePool as a per-channel mean, and the same plans for CUDA, whose conv, pool,
// mean and matmul workloads all have CUDA mappings (a ResNet-18-like graph end to end).
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "common/graph/batchnorm_folding.h"
#include "common/graph/constant_folding.h"
#include "common/graph/decompose.h"
#include "common/graph/fusion_planner.h"
#include "common/graph/op_support.h"
#include "common/ir/conv.h"
#include "common/ir/reference.h"
#include "common/kernels/registry.h"
#include "common/target/target.h"
#include "common/util/status.h"
#include "gtest/gtest.h"
#include "tests/unit/graph/test_graphs.h"

namespace gtco::graph {
namespace {

using namespace ::gtco::graph::testing;  // NOLINT(build/namespaces)
using ir::AnchorKind;
using ir::EwOp;

absl::StatusOr<Graph> Prepare(std::vector<Tensor> tensors, std::vector<Node> nodes,
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
  GTCO_RETURN_IF_ERROR(FoldConstants(graph));
  GTCO_RETURN_IF_ERROR(FoldBatchNorm(graph));
  GTCO_RETURN_IF_ERROR(DecomposeOps(graph));
  GTCO_RETURN_IF_ERROR(CheckSupportedOps(graph));
  return graph;
}

/// BN parameters for `channels` channels: scale 1 + 0.1c, bias 0.2c, mean 0.05c, var 1 + c.
std::vector<Tensor> BnParams(const std::string& prefix, int64_t channels) {
  std::vector<double> scale, bias, mean, var;
  for (int64_t c = 0; c < channels; ++c) {
    scale.push_back(1.0 + 0.1 * c);
    bias.push_back(0.2 * c);
    mean.push_back(0.05 * c);
    var.push_back(1.0 + c);
  }
  return {FloatConstant(prefix + "scale", {channels}, scale),
          FloatConstant(prefix + "bias", {channels}, bias),
          FloatConstant(prefix + "mean", {channels}, mean),
          FloatConstant(prefix + "var", {channels}, var)};
}

Node Bn(const std::string& name, const std::string& x, const std::string& y,
        const std::string& prefix) {
  return MakeNode("BatchNormalization", name,
                  {x, prefix + "scale", prefix + "bias", prefix + "mean", prefix + "var"}, {y},
                  {{"epsilon", FloatAttr(1e-5f)}});
}

std::map<std::string, Attribute> Conv3x3Attrs(int64_t stride = 1) {
  return {{"kernel_shape", IntsAttr({3, 3})},
          {"pads", IntsAttr({1, 1, 1, 1})},
          {"strides", IntsAttr({stride, stride})}};
}

/// ResNet's basic block tail: conv -> BN -> (+ x) -> ReLU.
std::vector<Tensor> BlockTensors() {
  std::vector<Tensor> tensors = {Activation("x", {1, 4, 8, 8}), Weights("w", {4, 4, 3, 3})};
  for (Tensor& param : BnParams("bn_", 4)) tensors.push_back(param);
  return tensors;
}

TEST(ConvPlanningTest, BatchNormFoldsIntoConvAndTheBlockIsOneWorkload) {
  absl::StatusOr<Graph> graph =
      Prepare(BlockTensors(),
              {MakeNode("Conv", "conv", {"x", "w"}, {"c"}, Conv3x3Attrs()), Bn("bn", "c", "b", "bn_"),
               MakeNode("Add", "residual", {"b", "x"}, {"s"}),
               MakeNode("Relu", "relu", {"s"}, {"y"})},
              {"y"});
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (const Node& node : graph->nodes) EXPECT_NE(node.op_type, "BatchNormalization");
  absl::StatusOr<std::vector<PlannedWorkload>> planned = PlanWorkloads(*graph);
  ASSERT_TRUE(planned.ok()) << planned.status();
  ASSERT_EQ(planned->size(), 1u);
  const ir::Workload& w = (*planned)[0].workload;
  EXPECT_EQ(w.anchor, AnchorKind::kConv);
  EXPECT_TRUE(w.Validate().ok()) << w.Validate();
  EXPECT_EQ(w.output.shape, (std::vector<int64_t>{1, 4, 8, 8}));
  // Folded bias (per channel), then the residual (full shape), then ReLU.
  ASSERT_EQ(w.epilogue.size(), 3u);
  EXPECT_EQ(w.epilogue[0].op, EwOp::kAdd);
  EXPECT_EQ(w.epilogue[2].op, EwOp::kRelu);
  ASSERT_EQ(w.inputs.size(), 4u);
  EXPECT_EQ(w.inputs[2].shape, (std::vector<int64_t>{4, 1, 1}));
  EXPECT_EQ(w.inputs[3].shape, (std::vector<int64_t>{1, 4, 8, 8}));
  EXPECT_EQ((*planned)[0].node_names, (std::vector<std::string>{"conv", "residual", "relu"}));
  EXPECT_NE(w.Description().find("conv 1x4x8x8 k4 3x3 s1 p1"), std::string::npos)
      << w.Description();
}

TEST(ConvPlanningTest, FoldedWeightsComputeWhatConvThenBatchNormComputes) {
  absl::StatusOr<Graph> graph = Prepare(
      BlockTensors(),
      {MakeNode("Conv", "conv", {"x", "w"}, {"c"}, Conv3x3Attrs()), Bn("bn", "c", "y", "bn_")},
      {"y"});
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 1u);
  const Node& conv = graph->nodes[0];
  ASSERT_EQ(conv.inputs.size(), 3u);
  EXPECT_EQ(conv.outputs[0], "y");
  const Tensor& folded_w = graph->tensor(conv.inputs[1]);
  const Tensor& folded_b = graph->tensor(conv.inputs[2]);
  EXPECT_EQ(graph->tensor("w").float_data[0], 0.0);  // the original weights are untouched
  // Conv (weights w) then BN, evaluated by hand, against conv (folded weights) + folded bias.
  ir::ConvParams p;
  p.in_channels = p.out_channels = 4;
  p.in_h = p.in_w = 8;
  p.kernel_h = p.kernel_w = 3;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  const ir::Workload conv_w = ir::MakeConvWorkload(p);
  std::vector<std::vector<float>> inputs = ir::RandomInputs(conv_w, 5);
  std::vector<float> original(graph->tensor("w").float_data.begin(),
                              graph->tensor("w").float_data.end());
  std::vector<float> folded(folded_w.float_data.begin(), folded_w.float_data.end());
  std::vector<float> plain(p.out_channels * 64), fused(p.out_channels * 64);
  ir::ConvReference(p, inputs[0], original, 0, 4, plain.data());
  ir::ConvReference(p, inputs[0], folded, 0, 4, fused.data());
  for (int64_t k = 0; k < 4; ++k) {
    const double a = (1.0 + 0.1 * k) / std::sqrt(1.0 + k + 1e-5);
    for (int64_t i = 0; i < 64; ++i) {
      const double expected = (plain[k * 64 + i] - 0.05 * k) * a + 0.2 * k;
      EXPECT_NEAR(fused[k * 64 + i] + folded_b.float_data[k], expected, 1e-4);
    }
  }
}

TEST(ConvPlanningTest, BatchNormWithoutConvBecomesPerChannelScaleAndShift) {
  std::vector<Tensor> tensors = {Activation("x", {1, 4, 5, 5})};
  for (Tensor& param : BnParams("bn_", 4)) tensors.push_back(param);
  absl::StatusOr<Graph> graph = Prepare(tensors, {Bn("bn", "x", "y", "bn_")}, {"y"});
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 2u);
  EXPECT_EQ(graph->nodes[0].op_type, "Mul");
  EXPECT_EQ(graph->nodes[1].op_type, "Add");
  EXPECT_EQ(graph->nodes[1].outputs[0], "y");
  EXPECT_EQ(graph->tensor(graph->nodes[0].inputs[1]).shape, (std::vector<int64_t>{4, 1, 1}));
  absl::StatusOr<std::vector<PlannedWorkload>> planned = PlanWorkloads(*graph);
  ASSERT_TRUE(planned.ok()) << planned.status();
  ASSERT_EQ(planned->size(), 1u);  // one element-wise chain
  EXPECT_EQ((*planned)[0].workload.anchor, AnchorKind::kNone);
}

TEST(ConvPlanningTest, BatchNormErrorsNameTheNode) {
  std::vector<Tensor> tensors = {Activation("x", {1, 4, 5, 5}), Activation("m", {4})};
  for (Tensor& param : BnParams("bn_", 4)) tensors.push_back(param);
  absl::StatusOr<Graph> training = Prepare(
      tensors,
      {MakeNode("BatchNormalization", "train_bn",
                {"x", "bn_scale", "bn_bias", "bn_mean", "bn_var"}, {"y"},
                {{"training_mode", IntAttr(1)}})},
      {"y"});
  ASSERT_FALSE(training.ok());
  EXPECT_EQ(training.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(training.status().message().find("train_bn"), std::string::npos);
  absl::StatusOr<Graph> runtime_mean = Prepare(
      tensors,
      {MakeNode("BatchNormalization", "dyn_bn", {"x", "bn_scale", "bn_bias", "m", "bn_var"}, {"y"})},
      {"y"});
  ASSERT_FALSE(runtime_mean.ok());
  EXPECT_NE(runtime_mean.status().message().find("'m' is computed at run time"),
            std::string::npos)
      << runtime_mean.status();
}

TEST(ConvPlanningTest, GroupedStridedConvAndGlobalAveragePool) {
  absl::StatusOr<Graph> graph = Prepare(
      {Activation("x", {2, 6, 9, 9}), Weights("w", {6, 1, 3, 3}), Weights("b", {6})},
      {MakeNode("Conv", "dw", {"x", "w", "b"}, {"c"},
                {{"group", IntAttr(6)}, {"pads", IntsAttr({1, 1, 1, 1})},
                 {"strides", IntsAttr({2, 2})}}),
       MakeNode("GlobalAveragePool", "gap", {"c"}, {"y"})},
      {"y"});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->tensor("c").shape, (std::vector<int64_t>{2, 6, 5, 5}));
  EXPECT_EQ(graph->tensor("y").shape, (std::vector<int64_t>{2, 6, 1, 1}));
  absl::StatusOr<std::vector<PlannedWorkload>> planned = PlanWorkloads(*graph);
  ASSERT_TRUE(planned.ok()) << planned.status();
  ASSERT_EQ(planned->size(), 2u);
  const ir::Workload& conv = (*planned)[0].workload;
  EXPECT_EQ(conv.anchor, AnchorKind::kConv);
  EXPECT_EQ(conv.conv.groups, 6);
  EXPECT_EQ(conv.conv.stride_h, 2);
  EXPECT_NE(conv.Description().find("/g6"), std::string::npos) << conv.Description();
  const ir::Workload& gap = (*planned)[1].workload;
  EXPECT_EQ(gap.anchor, AnchorKind::kReduceMean);
  EXPECT_EQ(gap.row.rows, 12);
  EXPECT_EQ(gap.row.cols, 25);
}

/// The names of the CUDA mappings that apply to `w` on sm_`sm`, in registry order (empty when
/// none does).
std::vector<std::string> CudaMappings(const ir::Workload& w, int sm) {
  absl::StatusOr<std::vector<schedule::SearchSpace>> spaces =
      kernels::CreateMappingSpaces(w, target::CudaArchPreset(sm));
  std::vector<std::string> names;
  if (!spaces.ok()) return names;
  for (const schedule::SearchSpace& space : *spaces) names.push_back(space.mapping());
  return names;
}

TEST(ConvPlanningTest, SameUpperPadsPlanForCpuAndCuda) {
  absl::StatusOr<Graph> graph = Prepare(
      {Activation("x", {1, 3, 10, 10}), Weights("w", {4, 3, 4, 4})},
      {MakeNode("Conv", "same", {"x", "w"}, {"y"},
                {{"auto_pad", [] {
                    Attribute attribute;
                    attribute.kind = Attribute::Kind::kString;
                    attribute.s = "SAME_UPPER";
                    return attribute;
                  }()},
                 {"strides", IntsAttr({3, 3})}})},
      {"y"});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->tensor("y").shape, (std::vector<int64_t>{1, 4, 4, 4}));
  absl::StatusOr<std::vector<PlannedWorkload>> planned = PlanWorkloads(*graph);
  ASSERT_TRUE(planned.ok()) << planned.status();
  const ir::ConvParams& p = (*planned)[0].workload.conv;
  // out 4 = ceil(10 / 3); total pad (4-1)*3 + 4 - 10 = 3: 1 before, 2 after (SAME_UPPER).
  EXPECT_EQ(p.pad_top, 1);
  EXPECT_EQ(p.pad_bottom, 2);
  EXPECT_EQ(p.pad_left, 1);
  EXPECT_EQ(p.pad_right, 2);
  // CUDA plans the same conv workload (same key, so records are shared), and its space has the
  // implicit-GEMM mappings: TF32 tensor cores from sm_80, SIMT everywhere.
  PlanOptions cuda;
  cuda.target = target::Target::kCuda;
  absl::StatusOr<std::vector<PlannedWorkload>> on_gpu = PlanWorkloads(*graph, cuda);
  ASSERT_TRUE(on_gpu.ok()) << on_gpu.status();
  ASSERT_EQ(on_gpu->size(), 1u);
  EXPECT_EQ((*on_gpu)[0].workload.Key(), (*planned)[0].workload.Key());
  for (int sm : {80, 90}) {
    EXPECT_EQ(CudaMappings((*on_gpu)[0].workload, sm),
              (std::vector<std::string>{"tf32_mma", "simt"}));
  }
  EXPECT_EQ(CudaMappings((*on_gpu)[0].workload, 70), (std::vector<std::string>{"simt"}));
}

TEST(ConvPlanningTest, ResNet18LikeGraphPlansForCudaWithAMappingPerWorkload) {
  // Stem (7x7 s2 p3 conv, BN, ReLU, 3x3 s2 max pool), a basic block, a downsampling block (3x3
  // s2 conv and a strided 1x1 shortcut), global average pool, flatten and the classifier.
  std::vector<Tensor> tensors = {Activation("x", {1, 3, 32, 32}), Weights("w_stem", {8, 3, 7, 7}),
                                 Weights("w_a1", {8, 8, 3, 3}),   Weights("w_a2", {8, 8, 3, 3}),
                                 Weights("w_b1", {16, 8, 3, 3}),  Weights("w_b2", {16, 16, 3, 3}),
                                 Weights("w_down", {16, 8, 1, 1}), Weights("w_fc", {10, 16}),
                                 Weights("b_fc", {10})};
  for (const char* prefix : {"bn_stem_", "bn_a1_", "bn_a2_"}) {
    for (Tensor& param : BnParams(prefix, 8)) tensors.push_back(param);
  }
  for (const char* prefix : {"bn_b1_", "bn_b2_", "bn_down_"}) {
    for (Tensor& param : BnParams(prefix, 16)) tensors.push_back(param);
  }
  const std::map<std::string, Attribute> stem_attrs = {{"kernel_shape", IntsAttr({7, 7})},
                                                       {"pads", IntsAttr({3, 3, 3, 3})},
                                                       {"strides", IntsAttr({2, 2})}};
  absl::StatusOr<Graph> graph = Prepare(
      tensors,
      {MakeNode("Conv", "stem", {"x", "w_stem"}, {"s0"}, stem_attrs),
       Bn("bn_stem", "s0", "s1", "bn_stem_"), MakeNode("Relu", "stem_relu", {"s1"}, {"s2"}),
       MakeNode("MaxPool", "pool", {"s2"}, {"p"},
                {{"kernel_shape", IntsAttr({3, 3})},
                 {"pads", IntsAttr({1, 1, 1, 1})},
                 {"strides", IntsAttr({2, 2})}}),
       MakeNode("Conv", "a1", {"p", "w_a1"}, {"a1c"}, Conv3x3Attrs()),
       Bn("bn_a1", "a1c", "a1b", "bn_a1_"), MakeNode("Relu", "a1_relu", {"a1b"}, {"a1r"}),
       MakeNode("Conv", "a2", {"a1r", "w_a2"}, {"a2c"}, Conv3x3Attrs()),
       Bn("bn_a2", "a2c", "a2b", "bn_a2_"), MakeNode("Add", "a_add", {"a2b", "p"}, {"a_sum"}),
       MakeNode("Relu", "a_relu", {"a_sum"}, {"a"}),
       MakeNode("Conv", "b1", {"a", "w_b1"}, {"b1c"}, Conv3x3Attrs(2)),
       Bn("bn_b1", "b1c", "b1b", "bn_b1_"), MakeNode("Relu", "b1_relu", {"b1b"}, {"b1r"}),
       MakeNode("Conv", "b2", {"b1r", "w_b2"}, {"b2c"}, Conv3x3Attrs()),
       Bn("bn_b2", "b2c", "b2b", "bn_b2_"),
       MakeNode("Conv", "down", {"a", "w_down"}, {"dc"},
                {{"kernel_shape", IntsAttr({1, 1})}, {"strides", IntsAttr({2, 2})}}),
       Bn("bn_down", "dc", "db", "bn_down_"), MakeNode("Add", "b_add", {"b2b", "db"}, {"b_sum"}),
       MakeNode("Relu", "b_relu", {"b_sum"}, {"b"}),
       MakeNode("GlobalAveragePool", "gap", {"b"}, {"g"}),
       MakeNode("Flatten", "flatten", {"g"}, {"f"}),
       MakeNode("Gemm", "fc", {"f", "w_fc", "b_fc"}, {"y"}, {{"transB", IntAttr(1)}})},
      {"y"});
  ASSERT_TRUE(graph.ok()) << graph.status();
  PlanOptions cuda;
  cuda.target = target::Target::kCuda;
  absl::StatusOr<std::vector<PlannedWorkload>> planned = PlanWorkloads(*graph, cuda);
  ASSERT_TRUE(planned.ok()) << planned.status();
  std::map<AnchorKind, int> anchors;
  for (const PlannedWorkload& item : *planned) {
    ++anchors[item.workload.anchor];
    for (int sm : {80, 90}) {
      EXPECT_FALSE(CudaMappings(item.workload, sm).empty())
          << item.workload.Description() << " has no CUDA mapping on sm_" << sm;
    }
  }
  // stem, a1, a2, b1, b2 and the (subsampled) shortcut; one max pool; the mean; the classifier.
  EXPECT_EQ(anchors[AnchorKind::kConv], 6);
  EXPECT_EQ(anchors[AnchorKind::kPool], 1);
  EXPECT_EQ(anchors[AnchorKind::kReduceMean], 1);
  EXPECT_EQ(anchors[AnchorKind::kMatMul], 1);
}

TEST(ConvPlanningTest, MaxPoolAfterTheStemAndClipAsRelu6) {
  absl::StatusOr<Graph> graph = Prepare(
      {Activation("x", {1, 3, 16, 16}), Weights("w", {8, 3, 3, 3}), Weights("b", {8}),
       FloatConstant("zero", {}, {0.0}), FloatConstant("six", {}, {6.0})},
      {MakeNode("Conv", "stem", {"x", "w", "b"}, {"c"}, Conv3x3Attrs(2)),
       MakeNode("Clip", "relu6", {"c", "zero", "six"}, {"r"}),
       MakeNode("MaxPool", "pool", {"r"}, {"y"},
                {{"kernel_shape", IntsAttr({3, 3})},
                 {"pads", IntsAttr({1, 1, 1, 1})},
                 {"strides", IntsAttr({2, 2})}})},
      {"y"});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->tensor("y").shape, (std::vector<int64_t>{1, 8, 4, 4}));
  absl::StatusOr<std::vector<PlannedWorkload>> planned = PlanWorkloads(*graph);
  ASSERT_TRUE(planned.ok()) << planned.status();
  ASSERT_EQ(planned->size(), 2u);
  const ir::Workload& conv = (*planned)[0].workload;
  EXPECT_EQ(conv.anchor, AnchorKind::kConv);
  // bias, then ReLU6 as max(., 0) and min(., 6) with immediates (ONNX's order: with lo > hi
  // the result is hi).
  ASSERT_EQ(conv.epilogue.size(), 3u);
  EXPECT_EQ(conv.epilogue[1].op, EwOp::kMax);
  EXPECT_EQ(conv.epilogue[2].op, EwOp::kMin);
  EXPECT_EQ(conv.epilogue[2].args[1].kind, ir::Operand::Kind::kConst);
  EXPECT_EQ(conv.epilogue[2].args[1].value, 6.0f);
  const ir::Workload& pool = (*planned)[1].workload;
  EXPECT_EQ(pool.anchor, AnchorKind::kPool);
  EXPECT_TRUE(pool.pool.max);
  EXPECT_EQ(pool.Description(), "maxpool 1x8x8x8 3x3 s2 p1");
}

TEST(ConvPlanningTest, ClipWithARuntimeBoundNamesTheNode) {
  absl::StatusOr<Graph> graph =
      Prepare({Activation("x", {1, 4}), Activation("hi", {})},
              {MakeNode("Clip", "clamp", {"x", "", "hi"}, {"y"})}, {"y"});
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(graph.status().message().find("'clamp'"), std::string::npos) << graph.status();
  EXPECT_NE(graph.status().message().find("computed at run time"), std::string::npos);
}

TEST(ConvPlanningTest, StridedPointwiseConvBecomesSubsampleThenUnitStrideConv) {
  // ResNet's downsample branch: 1x1, stride 2, no padding, BN folded in.
  std::vector<Tensor> tensors = {Activation("x", {1, 8, 7, 6}), Weights("w", {16, 8, 1, 1})};
  for (Tensor& param : BnParams("bn_", 16)) tensors.push_back(param);
  absl::StatusOr<Graph> graph = Prepare(
      tensors,
      {MakeNode("Conv", "down", {"x", "w"}, {"c"},
                {{"kernel_shape", IntsAttr({1, 1})}, {"strides", IntsAttr({2, 2})}}),
       Bn("bn", "c", "y", "bn_")},
      {"y"});
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 2u);
  const Node& slice = graph->nodes[0];
  EXPECT_EQ(slice.op_type, "Slice");
  ASSERT_EQ(slice.inputs.size(), 5u);
  EXPECT_EQ(slice.inputs[0], "x");
  EXPECT_EQ(graph->tensor(slice.inputs[1]).int_data, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(graph->tensor(slice.inputs[2]).int_data, (std::vector<int64_t>{7, 6}));
  EXPECT_EQ(graph->tensor(slice.inputs[3]).int_data, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(graph->tensor(slice.inputs[4]).int_data, (std::vector<int64_t>{2, 2}));
  // ceil(7 / 2) x ceil(6 / 2), as the strided convolution's output.
  EXPECT_EQ(graph->tensor(slice.outputs[0]).shape, (std::vector<int64_t>{1, 8, 4, 3}));
  const Node& conv = graph->nodes[1];
  EXPECT_EQ(conv.op_type, "Conv");
  EXPECT_EQ(conv.inputs[0], slice.outputs[0]);
  EXPECT_FALSE(conv.HasAttr("strides"));
  absl::StatusOr<std::vector<PlannedWorkload>> planned = PlanWorkloads(*graph);
  ASSERT_TRUE(planned.ok()) << planned.status();
  ASSERT_EQ(planned->size(), 1u);
  EXPECT_EQ((*planned)[0].workload.output.shape, (std::vector<int64_t>{1, 16, 4, 3}));
  EXPECT_NE((*planned)[0].workload.Description().find("conv 1x8x4x3 k16 1x1 s1 p0"),
            std::string::npos)
      << (*planned)[0].workload.Description();

  // A padded strided 1x1 convolution reads zeros the subsample would not: it stays one conv.
  absl::StatusOr<Graph> padded = Prepare(
      {Activation("x", {1, 8, 7, 6}), Weights("w", {16, 8, 1, 1})},
      {MakeNode("Conv", "padded", {"x", "w"}, {"y"},
                {{"kernel_shape", IntsAttr({1, 1})},
                 {"strides", IntsAttr({2, 2})},
                 {"pads", IntsAttr({1, 1, 1, 1})}})},
      {"y"});
  ASSERT_TRUE(padded.ok()) << padded.status();
  ASSERT_EQ(padded->nodes.size(), 1u);
  EXPECT_EQ(padded->nodes[0].IntsAttr("strides"), (std::vector<int64_t>{2, 2}));
}

TEST(ConvPlanningTest, SplitBecomesOneSlicePerOutput) {
  Graph graph;
  graph.opset = 17;
  graph.SetTensor(Activation("x", {2, 6}));
  graph.inputs = {"x"};
  graph.SetTensor(Activation("a", {2, 2}));
  graph.SetTensor(Activation("b", {2, 4}));
  graph.nodes.push_back(MakeNode("Split", "halves", {"x"}, {"a", "b"}, {{"axis", IntAttr(-1)}}));
  graph.outputs = {"a", "b"};
  ASSERT_TRUE(DecomposeOps(graph).ok());
  ASSERT_TRUE(CheckSupportedOps(graph).ok());
  ASSERT_EQ(graph.nodes.size(), 2u);
  std::vector<std::vector<int64_t>> windows;
  for (const Node& node : graph.nodes) {
    EXPECT_EQ(node.op_type, "Slice");
    ASSERT_EQ(node.inputs.size(), 4u);
    std::vector<int64_t> window;
    for (size_t i = 1; i < 4; ++i) window.push_back(graph.tensor(node.inputs[i]).int_data.at(0));
    windows.push_back(window);
  }
  EXPECT_EQ(windows, (std::vector<std::vector<int64_t>>{{0, 2, 1}, {2, 6, 1}}));

  // Outputs whose sizes do not add up are refused, naming the node.
  graph.nodes = {MakeNode("Split", "odd", {"x"}, {"a", "a2"}, {{"axis", IntAttr(1)}})};
  graph.SetTensor(Activation("a2", {2, 3}));
  absl::Status odd = DecomposeOps(graph);
  EXPECT_EQ(odd.code(), absl::StatusCode::kInvalidArgument) << odd;
  EXPECT_NE(odd.message().find("'odd'"), std::string::npos) << odd;
  // So are outputs of unknown shape.
  graph.nodes = {MakeNode("Split", "blind", {"x"}, {"u"}, {{"axis", IntAttr(1)}})};
  graph.SetTensor(Unshaped("u"));
  absl::Status blind = DecomposeOps(graph);
  EXPECT_EQ(blind.code(), absl::StatusCode::kUnimplemented) << blind;
  EXPECT_NE(blind.message().find("'blind'"), std::string::npos) << blind;
}

}  // namespace
}  // namespace gtco::graph
