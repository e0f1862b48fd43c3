// Tests of planning low-precision models into workloads: bf16 MatMul and MatMulInteger become
// typed matmul workloads; unsupported dtypes, zero points and casts are refused with
// UNIMPLEMENTED naming the dtype or tensor and the node.
#include <fstream>
#include <sstream>

#include "common/graph/fusion_planner.h"
#include "common/graph/integer_matmul_folding.h"
#include "common/onnx/model_analysis.h"
#include "common/graph/op_support.h"
#include "gtest/gtest.h"
#include "tests/unit/graph/test_graphs.h"

namespace gtco::graph {
namespace {

using onnx::AnalyzeOnnxModel;
using onnx::ModelAnalysis;
using onnx::ModelTask;

using testing::Activation;

std::string ReadModel(const std::string& name) {
  std::ifstream in(std::string(GTCO_SOURCE_DIR) + "/tests/data/" + name, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// MatMul(bf16, bf16) -> Cast(f32): the kernel writes its f32 sum; the Cast goes.
TEST(LowpPlanningTest, Bf16ModelBecomesOneBf16MatMulWorkload) {
  absl::StatusOr<ModelAnalysis> analysis = AnalyzeOnnxModel(ReadModel("matmul_bf16.onnx"), {});
  ASSERT_TRUE(analysis.ok()) << analysis.status();
  EXPECT_EQ(analysis->num_data_ops, 0);  // the Cast to f32 is the kernel's
  ASSERT_EQ(analysis->tasks.size(), 1u);
  const ir::Workload& w = analysis->tasks[0].workload;
  EXPECT_EQ(w.anchor, ir::AnchorKind::kMatMul);
  EXPECT_EQ(w.matmul.m, 4);
  EXPECT_EQ(w.matmul.n, 32);
  EXPECT_EQ(w.matmul.k, 64);
  ASSERT_EQ(w.inputs.size(), 2u);
  EXPECT_EQ(w.inputs[0].dtype, ir::DType::kBF16);
  EXPECT_EQ(w.inputs[1].dtype, ir::DType::kBF16);
  EXPECT_EQ(w.inputs[1].shape, (std::vector<int64_t>{1, 64, 32}));
  EXPECT_EQ(w.output.dtype, ir::DType::kF32);
  EXPECT_TRUE(w.epilogue.empty());
  EXPECT_TRUE(w.Validate().ok()) << w.Validate();
  EXPECT_NE(w.CanonicalString().find("input bf16 [1,4,64]"), std::string::npos);
  EXPECT_EQ(analysis->tasks[0].node_names, std::vector<std::string>{"matmul_bf16"});
}

TEST(LowpPlanningTest, MatMulIntegerModelCarriesZeroPoints) {
  absl::StatusOr<ModelAnalysis> analysis = AnalyzeOnnxModel(ReadModel("matmul_integer.onnx"), {});
  ASSERT_TRUE(analysis.ok()) << analysis.status();
  ASSERT_EQ(analysis->tasks.size(), 1u);
  const ir::Workload& w = analysis->tasks[0].workload;
  EXPECT_EQ(w.matmul.batch, 1);
  EXPECT_EQ(w.matmul.m, 3);  // [1, 3, 70] folds its leading dim into M
  EXPECT_EQ(w.matmul.n, 33);
  EXPECT_EQ(w.matmul.k, 70);
  EXPECT_EQ(w.matmul.a_zero_point, 7);
  EXPECT_EQ(w.matmul.b_zero_point, -3);
  EXPECT_EQ(w.inputs[0].dtype, ir::DType::kU8);
  EXPECT_EQ(w.inputs[1].dtype, ir::DType::kI8);
  // The Cast to f32 after it is folded in: the kernel writes the converted result.
  EXPECT_EQ(w.output.dtype, ir::DType::kF32);
  EXPECT_FALSE(w.matmul.a_zero_point_input);
  EXPECT_TRUE(w.Validate().ok()) << w.Validate();
  EXPECT_NE(w.CanonicalString().find("a_zero_point=7 b_zero_point=-3"), std::string::npos);
  EXPECT_EQ(analysis->tasks[0].node_names, std::vector<std::string>{"matmul_integer"});
  EXPECT_EQ(analysis->num_data_ops, 0);
}

// ONNX Runtime's quantize_dynamic of a 2-layer BERT: each Linear is DynamicQuantizeLinear ->
// MatMulInteger -> Cast -> Mul(x_scale * w_scale) -> Add(bias). It plans as one integer matmul
// kernel per Linear (A's zero point an input, f32 out, the scales and bias its epilogue), the
// matmuls of one shape sharing one task whatever their weights' scales; DynamicQuantizeLinear
// stays a data step, and the embeddings' DequantizeLinear of constants folds away.
TEST(LowpPlanningTest, DynamicallyQuantizedBertPlansOneIntegerKernelPerLinear) {
  absl::StatusOr<ModelAnalysis> analysis = AnalyzeOnnxModel(ReadModel("bert_tiny_int8.onnx"), {});
  ASSERT_TRUE(analysis.ok()) << analysis.status();
  int integer_matmuls = 0, qkv_weight = 0;
  for (const ModelTask& task : analysis->tasks) {
    const ir::Workload& w = task.workload;
    if (w.anchor != ir::AnchorKind::kMatMul || w.inputs[0].dtype == ir::DType::kF32) continue;
    SCOPED_TRACE(w.Description());
    integer_matmuls += task.weight;
    EXPECT_EQ(w.inputs[0].dtype, ir::DType::kU8);
    EXPECT_EQ(w.inputs[1].dtype, ir::DType::kI8);
    EXPECT_TRUE(w.matmul.a_zero_point_input);
    EXPECT_EQ(w.num_anchor_inputs, 3);
    EXPECT_EQ(w.output.dtype, ir::DType::kF32);
    // acc * x_scale ([1]) * w_scale (per column), then the bias and whatever follows.
    ASSERT_GE(w.epilogue.size(), 3u);
    EXPECT_EQ(w.epilogue[0].op, ir::EwOp::kMul);
    EXPECT_EQ(w.inputs[w.epilogue[0].args[1].index].shape, (std::vector<int64_t>{1}));
    EXPECT_EQ(w.epilogue[1].op, ir::EwOp::kMul);
    EXPECT_EQ(w.inputs[w.epilogue[1].args[1].index].NumElements(), w.matmul.n);
    EXPECT_TRUE(w.Validate().ok()) << w.Validate();
    if (w.epilogue.size() == 3 && w.matmul.m == 16 && w.matmul.n == 64) qkv_weight = task.weight;
  }
  // Per layer Q, K, V, the attention output and the two FFN matmuls; then the pooler.
  EXPECT_EQ(integer_matmuls, 2 * 6 + 1);
  EXPECT_EQ(qkv_weight, 2 * 3);  // Q, K and V of both layers: one task
  // The Casts and the scale products are gone; each DynamicQuantizeLinear is a data step (one per
  // quantized input: Q/K/V share one), beside the model's own reshapes and transposes.
  EXPECT_GT(analysis->num_data_ops, 0);
}

// quantize_static (QDQ) of the same BERT: every MatMul (attention's too) and the pooler's Gemm read
// DequantizeLinear outputs; each becomes an integer matmul of the quantized data, never a float
// one on dequantized values, its scales an epilogue input.
TEST(LowpPlanningTest, QdqBertRunsEveryMatMulOnIntegers) {
  absl::StatusOr<ModelAnalysis> analysis = AnalyzeOnnxModel(ReadModel("bert_tiny_qdq.onnx"), {});
  ASSERT_TRUE(analysis.ok()) << analysis.status();
  int integer = 0;
  for (const ModelTask& task : analysis->tasks) {
    const ir::Workload& w = task.workload;
    if (w.anchor != ir::AnchorKind::kMatMul) continue;
    SCOPED_TRACE(w.Description());
    EXPECT_TRUE(ir::IsLowPrecisionMatMul(w));
    EXPECT_EQ(w.inputs[0].dtype, ir::DType::kU8);
    EXPECT_EQ(w.output.dtype, ir::DType::kF32);
    EXPECT_FALSE(w.matmul.a_zero_point_input);  // calibrated: constant zero points
    ASSERT_FALSE(w.epilogue.empty());
    EXPECT_EQ(w.epilogue[0].op, ir::EwOp::kMul);
    integer += task.weight;
  }
  // Per layer Q, K, V, the two attention matmuls, the attention output and the FFN's two; the
  // pooler's Gemm.
  EXPECT_EQ(integer, 2 * 8 + 1);
}

// quantize_dynamic of a patch embedding (Conv 4x4 stride 4 on [1, 3, 16, 16], u8 weights): the
// ConvInteger becomes patch rows times the weights on the integer kernels, exactly.
TEST(LowpPlanningTest, PatchConvIntegerBecomesAnIntegerMatMul) {
  absl::StatusOr<ModelAnalysis> analysis =
      AnalyzeOnnxModel(ReadModel("patch_embed_int8.onnx"), {});
  ASSERT_TRUE(analysis.ok()) << analysis.status();
  bool found_patches = false;
  for (const ModelTask& task : analysis->tasks) {
    const ir::Workload& w = task.workload;
    if (w.anchor != ir::AnchorKind::kMatMul || w.matmul.k != 3 * 4 * 4) continue;
    found_patches = true;
    EXPECT_EQ(w.matmul.m, 16);  // 4 x 4 patches
    EXPECT_EQ(w.matmul.n, 32);
    EXPECT_EQ(w.inputs[0].dtype, ir::DType::kU8);
    EXPECT_EQ(w.inputs[1].dtype, ir::DType::kU8);
    EXPECT_TRUE(w.matmul.a_zero_point_input);
    EXPECT_EQ(w.output.dtype, ir::DType::kI32);  // converted after the transpose back to NCHW
  }
  EXPECT_TRUE(found_patches);
}

TEST(LowpPlanningTest, F16ModelBecomesOneF16MatMulWorkload) {
  // Planned for any target; only CUDA mappings run it (the server refuses it for cpu jobs).
  absl::StatusOr<ModelAnalysis> f16 = AnalyzeOnnxModel(ReadModel("matmul_f16.onnx"), {});
  ASSERT_TRUE(f16.ok()) << f16.status();
  ASSERT_EQ(f16->tasks.size(), 1u);
  const ir::Workload& w = f16->tasks[0].workload;
  EXPECT_EQ(w.inputs[0].dtype, ir::DType::kF16);
  EXPECT_EQ(w.inputs[1].dtype, ir::DType::kF16);
  EXPECT_EQ(w.output.dtype, ir::DType::kF16);
  EXPECT_TRUE(w.Validate().ok()) << w.Validate();
}

TEST(LowpPlanningTest, LowPrecisionFormsNoKernelTakesRunAsFallbackSteps) {
  absl::StatusOr<ModelAnalysis> per_row =
      AnalyzeOnnxModel(ReadModel("matmul_integer_per_row.onnx"), {});
  ASSERT_TRUE(per_row.ok()) << per_row.status();
  ASSERT_EQ(per_row->fallbacks.size(), 1u);
  EXPECT_EQ(per_row->fallbacks[0].op_type, "MatMulInteger");
  EXPECT_NE(per_row->fallbacks[0].reason.find(
                "node 'matmul_integer': zero point 'a_zero_point' must be a per-tensor scalar"),
            std::string::npos)
      << per_row->fallbacks[0].reason;
}

/// A graph with one node `op` reading `inputs` and writing `output`.
Graph OneNode(const std::string& op, std::vector<Tensor> inputs, Tensor output) {
  Graph graph;
  Node node;
  node.op_type = op;
  node.name = "n0";
  for (Tensor& input : inputs) {
    node.inputs.push_back(input.name);
    if (!input.is_constant) graph.inputs.push_back(input.name);
    graph.SetTensor(std::move(input));
  }
  node.outputs = {output.name};
  graph.outputs = {output.name};
  graph.SetTensor(std::move(output));
  graph.nodes.push_back(std::move(node));
  return graph;
}

TEST(LowpPlanningTest, MixedOrRuntimeOperandsAreRefusedNamingDtypeAndNode) {
  Graph mixed =
      OneNode("MatMul", {Activation("a", {4, 8}, ElemType::kBFloat16), Activation("b", {8, 4})},
              Activation("y", {4, 4}, ElemType::kBFloat16));
  absl::Status status = CheckSupportedOps(mixed);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("node 'n0' computes on f32 tensor 'b'"), std::string::npos)
      << status;

  // A's zero point may be computed at run time (DynamicQuantizeLinear's); B's may not.
  Graph runtime_zero =
      OneNode("MatMulInteger",
              {Activation("a", {4, 8}, ElemType::kUInt8), Activation("b", {8, 4}, ElemType::kInt8),
               Activation("za", {}, ElemType::kUInt8)},
              Activation("y", {4, 4}, ElemType::kInt32));
  EXPECT_TRUE(CheckSupportedOps(runtime_zero).ok()) << CheckSupportedOps(runtime_zero);
  Graph runtime_b_zero =
      OneNode("MatMulInteger",
              {Activation("a", {4, 8}, ElemType::kUInt8), Activation("b", {8, 4}, ElemType::kInt8),
               Activation("za", {}, ElemType::kUInt8), Activation("zb", {}, ElemType::kInt8)},
              Activation("y", {4, 4}, ElemType::kInt32));
  status = CheckSupportedOps(runtime_b_zero);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("zero point 'zb' must be a constant per-tensor scalar"),
            std::string::npos)
      << status;

  // DequantizeLinear: per tensor or per axis entry; blocked scales are refused by name.
  Graph blocked = OneNode("DequantizeLinear",
                          {Activation("q", {4, 8}, ElemType::kInt8), Activation("s", {4, 2})},
                          Activation("x", {4, 8}));
  status = CheckSupportedOps(blocked);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("node 'n0': scale 's' of shape [4,2] is neither per tensor"),
            std::string::npos)
      << status;
  Graph per_axis = OneNode("DequantizeLinear",
                           {Activation("q", {4, 8}, ElemType::kInt8), Activation("s", {8})},
                           Activation("x", {4, 8}));
  per_axis.nodes[0].attributes["axis"].kind = Attribute::Kind::kInt;
  per_axis.nodes[0].attributes["axis"].i = -1;
  EXPECT_TRUE(CheckSupportedOps(per_axis).ok()) << CheckSupportedOps(per_axis);
  Graph f16_in = OneNode("DequantizeLinear",
                         {Activation("q", {4, 8}, ElemType::kFloat16), Activation("s", {1})},
                         Activation("x", {4, 8}));
  status = CheckSupportedOps(f16_in);
  EXPECT_NE(status.message().find("input 'q' is f16; u8, i8 and i32 are supported"),
            std::string::npos)
      << status;

  // quantize_dynamic(per_channel=True): B's zero points per column, all equal, are one value;
  // unequal ones are refused.
  Tensor per_column = Activation("zb", {4}, ElemType::kInt8);
  per_column.is_constant = true;
  per_column.int_data = {0, 0, 0, 0};
  Graph per_channel =
      OneNode("MatMulInteger",
              {Activation("a", {4, 8}, ElemType::kUInt8), Activation("b", {8, 4}, ElemType::kInt8),
               Activation("za", {}, ElemType::kUInt8), per_column},
              Activation("y", {4, 4}, ElemType::kInt32));
  EXPECT_TRUE(CheckSupportedOps(per_channel).ok()) << CheckSupportedOps(per_channel);
  absl::StatusOr<std::vector<PlannedWorkload>> per_channel_plan = PlanWorkloads(per_channel);
  ASSERT_TRUE(per_channel_plan.ok()) << per_channel_plan.status();
  ASSERT_EQ(per_channel_plan->size(), 1u);
  EXPECT_EQ((*per_channel_plan)[0].workload.matmul.b_zero_point, 0);
  EXPECT_TRUE((*per_channel_plan)[0].workload.matmul.a_zero_point_input);
  per_channel.mutable_tensor("zb").int_data = {0, 1, 0, 0};
  status = CheckSupportedOps(per_channel);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("zero point 'zb' must be a constant per-tensor scalar"),
            std::string::npos)
      << status;

  Graph wide =
      OneNode("MatMulInteger",
              {Activation("a", {4, 8}, ElemType::kInt32), Activation("b", {8, 4}, ElemType::kInt8)},
              Activation("y", {4, 4}, ElemType::kInt32));
  status = CheckSupportedOps(wide);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("i32 tensor 'a'"), std::string::npos) << status;

  Graph cast = OneNode("Cast", {Activation("a", {4}, ElemType::kInt8)}, Activation("y", {4}));
  cast.nodes[0].attributes["to"] = testing::IntAttr(1);
  status = CheckSupportedOps(cast);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("converts i8 tensor 'a'"), std::string::npos) << status;
  cast.mutable_tensor("a").type = ElemType::kInt32;  // i32 -> f32 follows MatMulInteger
  EXPECT_TRUE(CheckSupportedOps(cast).ok());

  Graph integer = OneNode(
      "MatMulInteger",
      {Activation("a", {2, 4, 8}, ElemType::kInt8), Activation("b", {8, 4}, ElemType::kUInt8)},
      Activation("y", {2, 4, 4}, ElemType::kInt32));
  ASSERT_TRUE(CheckSupportedOps(integer).ok());
  absl::StatusOr<std::vector<PlannedWorkload>> planned = PlanWorkloads(integer);
  ASSERT_TRUE(planned.ok()) << planned.status();
  ASSERT_EQ(planned->size(), 1u);
  const ir::Workload& w = (*planned)[0].workload;
  EXPECT_EQ(w.inputs[0].dtype, ir::DType::kI8);
  EXPECT_EQ(w.inputs[1].dtype, ir::DType::kU8);
  EXPECT_EQ(w.matmul.m, 8);  // shared B: A's batch folds into M
  EXPECT_EQ(w.matmul.a_zero_point, 0);
}

TEST(LowpPlanningTest, OverlappingConvIntegerIsRefusedSayingWhatIsSupported) {
  Tensor weights = Activation("w", {8, 3, 3, 3}, ElemType::kInt8);
  weights.is_constant = true;
  weights.int_data.assign(8 * 3 * 3 * 3, 1);
  Graph graph = OneNode("ConvInteger", {Activation("x", {1, 3, 8, 8}, ElemType::kUInt8), weights},
                        Activation("y", {1, 8, 6, 6}, ElemType::kInt32));
  const absl::Status status = FoldIntegerMatMulOutputs(graph);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("'ConvInteger' at node 'n0': its windows overlap"),
            std::string::npos)
      << status;
  EXPECT_NE(status.message().find("only non-overlapping patch convolutions"), std::string::npos)
      << status;
}

}  // namespace
}  // namespace gtco::graph
