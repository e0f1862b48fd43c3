// Tests of attention fusion: hand-built attention subgraphs become one kAttention workload when
// planning for "cuda" (and stay matmul/softmax workloads for "cpu"); near-misses are not fused;
// the exported transformer block's attention fuses end to end.
#include "common/graph/attention_fusion.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "common/graph/constant_folding.h"
#include "common/graph/fusion_planner.h"
#include "common/graph/op_support.h"
#include "common/onnx/model_analysis.h"
#include "gtest/gtest.h"
#include "tests/unit/graph/test_graphs.h"

namespace gtco::graph {
namespace {

using onnx::AnalyzeOnnxModel;
using onnx::ModelAnalysis;
using onnx::ModelTask;

using namespace ::gtco::graph::testing;  // NOLINT(build/namespaces)
using ir::AnchorKind;

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

std::vector<PlannedWorkload> Plan(const Graph& graph, target::Target target) {
  PlanOptions options;
  options.target = target;
  absl::StatusOr<std::vector<PlannedWorkload>> planned = PlanWorkloads(graph, options);
  EXPECT_TRUE(planned.ok()) << planned.status();
  return planned.ok() ? *planned : std::vector<PlannedWorkload>{};
}

/// Variations of the torch-exported attention: q [1,2,16,32] @ k^T / sqrt(32) -> softmax -> @ v.
struct AttentionGraphSpec {
  bool transpose_k = true;       ///< K^T computed by Transpose(k, [0,1,3,2])
  std::string scale_op = "Div";  ///< "Div", "Mul", "MulLeft" (constant first) or "" (none)
  int64_t softmax_axis = -1;
  bool probs_is_output = false;  ///< the Softmax output is also a graph output
  bool mask = false;             ///< an Add of a mask between scale and Softmax
  std::vector<int64_t> mask_shape = {16};
  bool residual = false;         ///< out = attention + r
  bool scale_q = false;          ///< Q divided by sqrt(32) before the scores MatMul (PyTorch MHA)
  bool scaled_q_is_output = false;  ///< that scaled Q is also a graph output
  bool scale_kt = false;  ///< K^T multiplied by 1/sqrt(32) too (PyTorch 2's SDPA export)
};

Graph AttentionGraph(const AttentionGraphSpec& spec) {
  std::vector<Tensor> tensors = {
      Activation("q", {1, 2, 16, 32}), Activation("v", {1, 2, 16, 32}),
      FloatConstant("c", {}, {spec.scale_op == "Div" ? std::sqrt(32.0) : 1.0 / std::sqrt(32.0)})};
  std::vector<Node> nodes;
  if (spec.transpose_k) {
    tensors.push_back(Activation("k", {1, 2, 16, 32}));
    nodes.push_back(
        MakeNode("Transpose", "k_t", {"k"}, {"kt"}, {{"perm", IntsAttr({0, 1, 3, 2})}}));
  } else {
    tensors.push_back(Activation("kt", {1, 2, 32, 16}));
  }
  if (spec.scale_q) {
    tensors.push_back(FloatConstant("root_d", {}, {std::sqrt(32.0)}));
    nodes.push_back(MakeNode("Div", "q_scale", {"q", "root_d"}, {"qs"}));
  }
  if (spec.scale_kt) {
    tensors.push_back(FloatConstant("inv_root_d", {}, {1.0 / std::sqrt(32.0)}));
    nodes.push_back(MakeNode("Mul", "kt_scale", {"kt", "inv_root_d"}, {"kts"}));
  }
  nodes.push_back(MakeNode("MatMul", "scores",
                           {spec.scale_q ? "qs" : "q", spec.scale_kt ? "kts" : "kt"}, {"s"}));
  std::string scaled = "s";
  if (spec.scale_op == "Div") {
    nodes.push_back(MakeNode("Div", "scale", {"s", "c"}, {"s2"}));
    scaled = "s2";
  } else if (spec.scale_op == "Mul" || spec.scale_op == "MulLeft") {
    nodes.push_back(MakeNode("Mul", "scale",
                             spec.scale_op == "Mul" ? std::vector<std::string>{"s", "c"}
                                                    : std::vector<std::string>{"c", "s"},
                             {"s2"}));
    scaled = "s2";
  }
  if (spec.mask) {
    tensors.push_back(Activation("mask", spec.mask_shape));
    nodes.push_back(MakeNode("Add", "mask_add", {scaled, "mask"}, {"s3"}));
    scaled = "s3";
  }
  nodes.push_back(
      MakeNode("Softmax", "softmax", {scaled}, {"p"}, {{"axis", IntAttr(spec.softmax_axis)}}));
  nodes.push_back(MakeNode("MatMul", "context", {"p", "v"}, {"o"}));
  std::vector<std::string> outputs = {"o"};
  if (spec.residual) {
    tensors.push_back(Activation("r", {1, 2, 16, 32}));
    nodes.push_back(MakeNode("Add", "residual", {"o", "r"}, {"out"}));
    outputs = {"out"};
  }
  if (spec.probs_is_output) outputs.push_back("p");
  if (spec.scaled_q_is_output) outputs.push_back("qs");
  return Build(std::move(tensors), std::move(nodes), std::move(outputs));
}

std::vector<AnchorKind> Anchors(const std::vector<PlannedWorkload>& planned) {
  std::vector<AnchorKind> anchors;
  for (const PlannedWorkload& item : planned) anchors.push_back(item.workload.anchor);
  return anchors;
}

TEST(AttentionFusionTest, TorchPatternFusesIntoOneAttentionForCuda) {
  const Graph graph = AttentionGraph({});
  const std::vector<PlannedWorkload> planned = Plan(graph, target::Target::kCuda);
  ASSERT_EQ(planned.size(), 1u);
  const ir::Workload& w = planned[0].workload;
  EXPECT_EQ(w.anchor, AnchorKind::kAttention);
  EXPECT_EQ(w.attention.batch, 2);
  EXPECT_EQ(w.attention.seq_q, 16);
  EXPECT_EQ(w.attention.seq_k, 16);
  EXPECT_EQ(w.attention.head_dim, 32);
  EXPECT_EQ(w.attention.value_dim, 32);
  EXPECT_FALSE(w.attention.k_transposed);  // the Transpose is absorbed: K is [2, 16, 32]
  EXPECT_FLOAT_EQ(w.attention.scale, 1.0f / std::sqrt(32.0f));
  EXPECT_EQ(w.inputs[1].shape, (std::vector<int64_t>{2, 16, 32}));
  EXPECT_EQ(planned[0].node_names,
            (std::vector<std::string>{"k_t", "scores", "scale", "softmax", "context"}));
  EXPECT_TRUE(w.Validate().ok()) << w.Validate();
}

TEST(AttentionFusionTest, CpuPlanningIsUnchanged) {
  const Graph graph = AttentionGraph({});
  const std::vector<PlannedWorkload> cpu = Plan(graph, target::Target::kCpu);
  EXPECT_EQ(Anchors(cpu), (std::vector<AnchorKind>{AnchorKind::kMatMul, AnchorKind::kSoftmax,
                                                   AnchorKind::kMatMul}));
  absl::StatusOr<std::vector<PlannedWorkload>> by_default = PlanWorkloads(graph);
  ASSERT_TRUE(by_default.ok());
  ASSERT_EQ(by_default->size(), cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_EQ((*by_default)[i].workload.CanonicalString(), cpu[i].workload.CanonicalString());
    EXPECT_EQ((*by_default)[i].node_names, cpu[i].node_names);
  }
}

// The farm's CPU planning (PlanOptionsFor(kCpu)) fuses attention too, masked ones included, and
// leaves K^T as the model computes it (the CPU kernel streams its key-contiguous rows).
TEST(AttentionFusionTest, CpuFusesMaskedAttentionReadingKTransposed) {
  AttentionGraphSpec spec;
  spec.mask = true;
  spec.residual = true;
  const Graph graph = AttentionGraph(spec);
  absl::StatusOr<std::vector<PlannedWorkload>> planned =
      PlanWorkloads(graph, PlanOptionsFor(target::Target::kCpu));
  ASSERT_TRUE(planned.ok()) << planned.status();
  ASSERT_EQ(planned->size(), 1u);
  const PlannedWorkload& item = (*planned)[0];
  const ir::Workload& w = item.workload;
  EXPECT_EQ(w.anchor, AnchorKind::kAttention);
  EXPECT_TRUE(w.attention.k_transposed);
  EXPECT_EQ(w.attention.mask_groups, 1);
  EXPECT_FLOAT_EQ(w.attention.scale, 1.0f / std::sqrt(32.0f));
  EXPECT_EQ(w.num_anchor_inputs, 4);
  EXPECT_EQ(w.inputs[1].shape, (std::vector<int64_t>{2, 32, 16}));
  EXPECT_EQ(w.inputs[3].shape, (std::vector<int64_t>{1, 16}));
  EXPECT_EQ(item.input_tensors,
            (std::vector<std::string>{"q", "kt", "v", "mask", "r"}));
  EXPECT_EQ(item.node_names, (std::vector<std::string>{"scores", "scale", "mask_add", "softmax",
                                                       "context", "residual"}));
  EXPECT_TRUE(w.Validate().ok()) << w.Validate();
  // A mask per batch entry ([N, 1, 1, S] against scores [N, H, S, S]) is one row per group of
  // heads; a mask varying over the query rows is no mask the kernel takes: left unfused.
  for (const auto& [mask_shape, groups] :
       std::vector<std::pair<std::vector<int64_t>, int64_t>>{{{1, 1, 1, 16}, 1},
                                                             {{1, 2, 1, 16}, 2},
                                                             {{1, 2, 16, 16}, 0}}) {
    AttentionGraphSpec shaped = spec;
    shaped.mask_shape = mask_shape;
    const Graph masked = AttentionGraph(shaped);
    const std::vector<AttentionMatch> matches =
        FindAttentionPatterns(masked, AttentionOptions{true, false});
    if (groups == 0) {
      EXPECT_TRUE(matches.empty());
      continue;
    }
    ASSERT_EQ(matches.size(), 1u);
    EXPECT_EQ(matches[0].params.mask_groups, groups);
  }
  // CUDA keeps masked attention unfused; with the environment's ablation switch the CPU does too.
  EXPECT_TRUE(FindAttentionPatterns(graph).empty());
  setenv("GTCO_UNFUSED_ATTENTION", "1", 1);
  const PlanOptions ablation = PlanOptionsFor(target::Target::kCpu);
  unsetenv("GTCO_UNFUSED_ATTENTION");
  absl::StatusOr<std::vector<PlannedWorkload>> unfused = PlanWorkloads(graph, ablation);
  ASSERT_TRUE(unfused.ok()) << unfused.status();
  EXPECT_EQ(Anchors(*unfused), (std::vector<AnchorKind>{AnchorKind::kMatMul, AnchorKind::kSoftmax,
                                                        AnchorKind::kMatMul}));
}

TEST(AttentionFusionTest, ScaleVariantsAndTransposedK) {
  AttentionGraphSpec no_transpose;
  no_transpose.transpose_k = false;
  std::vector<PlannedWorkload> planned = Plan(AttentionGraph(no_transpose), target::Target::kCuda);
  ASSERT_EQ(planned.size(), 1u);
  EXPECT_TRUE(planned[0].workload.attention.k_transposed);
  EXPECT_EQ(planned[0].workload.inputs[1].shape, (std::vector<int64_t>{2, 32, 16}));
  EXPECT_EQ(planned[0].node_names,
            (std::vector<std::string>{"scores", "scale", "softmax", "context"}));

  for (const char* scale_op : {"Mul", "MulLeft"}) {
    AttentionGraphSpec mul;
    mul.scale_op = scale_op;
    planned = Plan(AttentionGraph(mul), target::Target::kCuda);
    ASSERT_EQ(planned.size(), 1u) << scale_op;
    EXPECT_EQ(planned[0].workload.anchor, AnchorKind::kAttention);
    EXPECT_FLOAT_EQ(planned[0].workload.attention.scale, 1.0f / std::sqrt(32.0f));
  }
  AttentionGraphSpec unscaled;
  unscaled.scale_op = "";
  planned = Plan(AttentionGraph(unscaled), target::Target::kCuda);
  ASSERT_EQ(planned.size(), 1u);
  EXPECT_EQ(planned[0].workload.attention.scale, 1.0f);
  EXPECT_EQ(planned[0].node_names,
            (std::vector<std::string>{"k_t", "scores", "softmax", "context"}));
}

// PyTorch's MultiheadAttention scales Q, not the scores: the Div joins the attention's scale (and
// its kernel), unless something else reads the scaled Q.
TEST(AttentionFusionTest, AScaleOfQJoinsTheAttentionScale) {
  AttentionGraphSpec q_only;
  q_only.scale_q = true;
  q_only.scale_op = "";
  std::vector<PlannedWorkload> planned = Plan(AttentionGraph(q_only), target::Target::kCuda);
  ASSERT_EQ(planned.size(), 1u);
  EXPECT_EQ(planned[0].workload.anchor, AnchorKind::kAttention);
  EXPECT_FLOAT_EQ(planned[0].workload.attention.scale, 1.0f / std::sqrt(32.0f));
  EXPECT_EQ(planned[0].input_tensors[0], "q");
  EXPECT_EQ(planned[0].node_names,
            (std::vector<std::string>{"k_t", "q_scale", "scores", "softmax", "context"}));

  AttentionGraphSpec both;
  both.scale_q = true;
  planned = Plan(AttentionGraph(both), target::Target::kCuda);
  ASSERT_EQ(planned.size(), 1u);
  EXPECT_FLOAT_EQ(planned[0].workload.attention.scale, 1.0f / 32.0f);

  // Both scaled (PyTorch 2's SDPA export): K's Transpose is still read in place.
  AttentionGraphSpec q_and_k;
  q_and_k.scale_q = true;
  q_and_k.scale_kt = true;
  q_and_k.scale_op = "";
  planned = Plan(AttentionGraph(q_and_k), target::Target::kCuda);
  ASSERT_EQ(planned.size(), 1u);
  EXPECT_FLOAT_EQ(planned[0].workload.attention.scale, 1.0f / 32.0f);
  EXPECT_FALSE(planned[0].workload.attention.k_transposed);
  EXPECT_EQ(planned[0].input_tensors[1], "k");
  EXPECT_EQ(planned[0].node_names, (std::vector<std::string>{"k_t", "q_scale", "kt_scale", "scores",
                                                             "softmax", "context"}));

  AttentionGraphSpec shared;
  shared.scale_q = true;
  shared.scaled_q_is_output = true;
  planned = Plan(AttentionGraph(shared), target::Target::kCuda);
  ASSERT_EQ(planned.size(), 2u);  // the Div stays an element-wise workload of its own
  EXPECT_EQ(Anchors(planned), (std::vector<AnchorKind>{AnchorKind::kNone, AnchorKind::kAttention}));
  EXPECT_EQ(planned[1].input_tensors[0], "qs");
  EXPECT_FLOAT_EQ(planned[1].workload.attention.scale, 1.0f / std::sqrt(32.0f));
}

TEST(AttentionFusionTest, EpilogueAfterTheAttentionJoinsIt) {
  AttentionGraphSpec spec;
  spec.residual = true;
  const std::vector<PlannedWorkload> planned = Plan(AttentionGraph(spec), target::Target::kCuda);
  ASSERT_EQ(planned.size(), 1u);
  const ir::Workload& w = planned[0].workload;
  EXPECT_EQ(w.Description(), "attention 2x16x16x32 scale=0.176777 +add");
  ASSERT_EQ(w.inputs.size(), 4u);
  EXPECT_EQ(w.inputs[3].shape, (std::vector<int64_t>{2, 16, 32}));
  EXPECT_EQ(planned[0].node_names.back(), "residual");
}

TEST(AttentionFusionTest, NearMissesAreNotFused) {
  AttentionGraphSpec escaping;
  escaping.probs_is_output = true;
  AttentionGraphSpec masked;
  masked.mask = true;
  AttentionGraphSpec other_axis;
  other_axis.softmax_axis = 2;
  for (const AttentionGraphSpec& spec : {escaping, masked, other_axis}) {
    const Graph graph = AttentionGraph(spec);
    EXPECT_TRUE(FindAttentionPatterns(graph).empty());
    absl::StatusOr<std::vector<PlannedWorkload>> planned = PlanWorkloads(graph, {target::Target::kCuda});
    if (spec.softmax_axis != -1) {
      // Softmax over a non-last axis is not plannable at all (as for "cpu").
      EXPECT_EQ(planned.status().code(), absl::StatusCode::kUnimplemented);
      continue;
    }
    ASSERT_TRUE(planned.ok()) << planned.status();
    for (const PlannedWorkload& item : *planned) {
      EXPECT_NE(item.workload.anchor, AnchorKind::kAttention);
    }
  }
}

std::string ReadModel(const std::string& name) {
  std::ifstream in(std::string(GTCO_SOURCE_DIR) + "/tests/data/" + name, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

TEST(AttentionFusionTest, TransformerBlockForCudaHasOneAttentionTask) {
  const std::string model = ReadModel("transformer_block.onnx");
  absl::StatusOr<ModelAnalysis> cuda = AnalyzeOnnxModel(model, {}, {target::Target::kCuda});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  std::vector<std::pair<std::string, int>> described;
  for (const ModelTask& task : cuda->tasks) {
    described.emplace_back(task.workload.Description(), task.weight);
    EXPECT_TRUE(task.workload.Validate().ok()) << task.workload.Validate();
    EXPECT_EQ(task.key, task.workload.Key());
  }
  const std::vector<std::pair<std::string, int>> expected = {
      {"layernorm 16x64", 2},
      {"matmul 1x16x192x64 (b x m x n x k) +add", 1},  // qkv
      {"attention 2x16x16x32 scale=0.176777", 1},      // softmax(q @ k^T / sqrt(d)) @ v
      {"matmul 1x16x64x64 (b x m x n x k) +add+add", 1},
      {"matmul 1x16x256x64 (b x m x n x k) +add+div+erf+add+mul+mul", 1},
      {"matmul 1x16x64x256 (b x m x n x k) +add+add", 1}};
  EXPECT_EQ(described, expected);
  const ModelTask& attention = cuda->tasks[2];
  EXPECT_EQ(attention.key.rfind("attention-", 0), 0u);
  EXPECT_FALSE(attention.workload.attention.k_transposed);
  EXPECT_EQ(attention.node_names.size(), 5u);  // Transpose of k, MatMul, Div, Softmax, MatMul
  EXPECT_EQ(cuda->num_data_ops, 7);            // the Transpose of k is part of the attention

  // The CPU analysis (explicit or by default) is what it always was.
  absl::StatusOr<ModelAnalysis> cpu = AnalyzeOnnxModel(model, {}, {target::Target::kCpu});
  absl::StatusOr<ModelAnalysis> by_default = AnalyzeOnnxModel(model, {});
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  ASSERT_TRUE(by_default.ok()) << by_default.status();
  EXPECT_EQ(cpu->num_data_ops, 8);
  ASSERT_EQ(cpu->tasks.size(), 8u);
  ASSERT_EQ(by_default->tasks.size(), cpu->tasks.size());
  for (size_t i = 0; i < cpu->tasks.size(); ++i) {
    EXPECT_NE(cpu->tasks[i].workload.anchor, AnchorKind::kAttention);
    EXPECT_EQ(cpu->tasks[i].key, by_default->tasks[i].key);
    EXPECT_EQ(cpu->tasks[i].node_names, by_default->tasks[i].node_names);
  }
}

TEST(AttentionFusionTest, PatchVitForCudaFusesItsAttention) {
  absl::StatusOr<ModelAnalysis> analysis =
      AnalyzeOnnxModel(ReadModel("patch_vit.onnx"), {{"input", {2, 4, 192}}}, {target::Target::kCuda});
  ASSERT_TRUE(analysis.ok()) << analysis.status();
  int attention_tasks = 0;
  for (const ModelTask& task : analysis->tasks) {
    EXPECT_NE(task.workload.anchor, AnchorKind::kSoftmax) << task.workload.Description();
    if (task.workload.anchor != AnchorKind::kAttention) continue;
    ++attention_tasks;
    EXPECT_EQ(task.workload.Description(), "attention 4x5x5x16 scale=0.25");
  }
  EXPECT_EQ(attention_tasks, 1);
}

std::vector<std::vector<std::string>> NodeLists(const std::vector<PlannedWorkload>& planned) {
  std::vector<std::vector<std::string>> lists;
  for (const PlannedWorkload& item : planned) lists.push_back(item.node_names);
  return lists;
}

// The farm's CPU plan weighs the fused attention against matmul, softmax, matmul: both are planned,
// the region where they differ is found, and the cheaper measured one is chosen.
TEST(AttentionFusionTest, CpuPlansAttentionBothWaysAndTheCheaperMeasuredWins) {
  AttentionGraphSpec spec;
  spec.mask = true;
  spec.residual = true;
  const Graph graph = AttentionGraph(spec);
  absl::StatusOr<ModelPlan> plan = PlanAlternatives(graph, PlanOptionsFor(target::Target::kCpu));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->variants, (std::vector<std::string>{"fused attention", "unfused attention"}));
  EXPECT_TRUE(plan->shared.empty());
  ASSERT_EQ(plan->regions.size(), 1u);
  const PlanRegion& region = plan->regions[0];
  ASSERT_EQ(region.alternatives.size(), 2u);
  ASSERT_EQ(region.alternatives[0].size(), 1u);
  EXPECT_EQ(plan->workloads[region.alternatives[0][0]].workload.anchor, AnchorKind::kAttention);
  ASSERT_EQ(region.alternatives[1].size(), 3u);

  // Each choice is exactly what planning that variant alone gives, in the same order.
  PlanOptions unfused_options = PlanOptionsFor(target::Target::kCpu);
  unfused_options.fuse_attention = false;
  absl::StatusOr<std::vector<PlannedWorkload>> fused =
      PlanWorkloads(graph, PlanOptionsFor(target::Target::kCpu));
  absl::StatusOr<std::vector<PlannedWorkload>> unfused = PlanWorkloads(graph, unfused_options);
  ASSERT_TRUE(fused.ok() && unfused.ok());
  EXPECT_EQ(NodeLists(SelectPlan(graph, *plan, {})), NodeLists(*fused));
  EXPECT_EQ(NodeLists(SelectPlan(graph, *plan, {1})), NodeLists(*unfused));
  EXPECT_EQ(
      Anchors(SelectPlan(graph, *plan, {1})),
      (std::vector<AnchorKind>{AnchorKind::kMatMul, AnchorKind::kSoftmax, AnchorKind::kMatMul}));

  // Costs: nothing measured keeps the default; the cheaper fully measured alternative wins; an
  // alternative with an unmeasured workload cannot win however cheap its measured part is.
  const auto no_records = [](const PlannedWorkload&) { return std::optional<double>(); };
  EXPECT_EQ(ChooseByCost(*plan, no_records), (std::vector<int>{0}));
  double attention_seconds = 3e-6;
  bool softmax_measured = true;
  const WorkloadCost cost = [&](const PlannedWorkload& item) -> std::optional<double> {
    switch (item.workload.anchor) {
      case AnchorKind::kAttention:
        return attention_seconds;
      case AnchorKind::kSoftmax:
        return softmax_measured ? std::optional<double>(0.5e-6) : std::nullopt;
      default:
        return 0.5e-6;
    }
  };
  EXPECT_EQ(ChooseByCost(*plan, cost), (std::vector<int>{1}));  // 1.5 us against 3 us
  EXPECT_DOUBLE_EQ(*AlternativeCost(*plan, region, 1, cost), 1.5e-6);
  attention_seconds = 1e-6;
  EXPECT_EQ(ChooseByCost(*plan, cost), (std::vector<int>{0}));
  attention_seconds = 3e-6;
  softmax_measured = false;
  EXPECT_FALSE(AlternativeCost(*plan, region, 1, cost).has_value());
  EXPECT_EQ(ChooseByCost(*plan, cost), (std::vector<int>{0}));

  // CUDA (and the ablation's unfused CPU plan) have one plan: nothing to choose.
  absl::StatusOr<ModelPlan> cuda = PlanAlternatives(graph, PlanOptions{target::Target::kCuda});
  ASSERT_TRUE(cuda.ok());
  EXPECT_EQ(cuda->variants.size(), 1u);
  EXPECT_TRUE(cuda->regions.empty());
  EXPECT_EQ(cuda->shared.size(), cuda->workloads.size());
}

// A model's alike attention regions are one plan choice: the bundled transformer block's, costed
// from the best seconds of its workloads.
TEST(AttentionFusionTest, TransformerBlockHasOnePlanChoiceCostedByItsRecords) {
  absl::StatusOr<ModelAnalysis> analysis = AnalyzeOnnxModel(ReadModel("transformer_block.onnx"), {},
                                                            PlanOptionsFor(target::Target::kCpu));
  ASSERT_TRUE(analysis.ok()) << analysis.status();
  ASSERT_EQ(analysis->plan_choices.size(), 1u);
  const onnx::PlanChoice& choice = analysis->plan_choices[0];
  EXPECT_GE(choice.instances, 1);
  ASSERT_EQ(choice.alternatives.size(), 2u);
  EXPECT_EQ(choice.alternatives[0].name, "fused attention");
  EXPECT_EQ(choice.alternatives[1].name, "unfused attention");
  EXPECT_NE(choice.description.find("attention"), std::string::npos) << choice.description;
  // Both alternatives' workloads are tasks.
  std::map<std::string, int> weight;
  std::vector<std::pair<std::string, int>> weights;
  for (const ModelTask& task : analysis->tasks) {
    weight[task.key] = task.weight;
    weights.emplace_back(task.key, task.weight);
  }
  for (const auto& alternative : choice.alternatives) {
    for (const auto& [key, count] : alternative.workloads) EXPECT_GE(weight[key], count) << key;
  }
  // Every workload 1 us: the plan's latency counts the chosen alternative once per region and
  // every other workload by its runs.
  int64_t runs = 0;
  for (const auto& [key, w] : weights) runs += w;
  int64_t fused_runs = 0, unfused_runs = 0;
  for (const auto& [key, count] : choice.alternatives[0].workloads) fused_runs += count;
  for (const auto& [key, count] : choice.alternatives[1].workloads) unfused_runs += count;
  const onnx::PlanCost all =
      onnx::CostPlan(weights, analysis->plan_choices,
                     [](const std::string&) { return std::optional<double>(1e-6); });
  EXPECT_EQ(all.chosen, (std::vector<int>{0}));  // one kernel against three
  EXPECT_NEAR(all.latency_seconds, (runs - choice.instances * unfused_runs) * 1e-6, 1e-12);
  ASSERT_EQ(all.costs[0].size(), 2u);
  EXPECT_NEAR(*all.costs[0][0], fused_runs * 1e-6, 1e-12);
  EXPECT_NEAR(*all.costs[0][1], unfused_runs * 1e-6, 1e-12);
  // The fused kernel 10 us: the unfused plan wins; unmeasured, it cannot.
  const std::string fused_key = choice.alternatives[0].workloads[0].first;
  const onnx::PlanCost slow_fused =
      onnx::CostPlan(weights, analysis->plan_choices, [&](const std::string& key) {
        return std::optional<double>(key == fused_key ? 10e-6 : 1e-6);
      });
  EXPECT_EQ(slow_fused.chosen, (std::vector<int>{1}));
  const onnx::PlanCost only_fused =
      onnx::CostPlan(weights, analysis->plan_choices, [&](const std::string& key) {
        return key == fused_key ? std::optional<double>(10e-6) : std::nullopt;
      });
  EXPECT_EQ(only_fused.chosen, (std::vector<int>{0}));
  EXPECT_NEAR(only_fused.latency_seconds, choice.instances * 10e-6, 1e-12);

  // The tuning budget: an alternative not measured yet keeps every task's full weight.
  auto tuning_weight = [](const onnx::PlanCost& cost, const std::string& key) -> int64_t {
    auto it = cost.tuning_weight.find(key);
    return it == cost.tuning_weight.end() ? 0 : it->second;
  };
  for (const auto& [key, w] : weights) EXPECT_EQ(tuning_weight(only_fused, key), w) << key;
  // The unfused alternative 3x behind the fused one: its own tasks stop drawing budget, the
  // others keep their runs.
  std::set<std::string> fused_keys, unfused_only;
  for (const auto& [key, count] : choice.alternatives[0].workloads) fused_keys.insert(key);
  for (const auto& [key, count] : choice.alternatives[1].workloads) {
    if (fused_keys.count(key) == 0) unfused_only.insert(key);
  }
  ASSERT_FALSE(unfused_only.empty());
  EXPECT_EQ(all.in_play, (std::vector<std::vector<bool>>{{true, false}}));
  EXPECT_EQ(only_fused.in_play, (std::vector<std::vector<bool>>{{true, true}}));
  for (const auto& [key, w] : weights) {
    EXPECT_EQ(tuning_weight(all, key), unfused_only.count(key) ? 0 : all.runs.at(key)) << key;
  }
  // The fused kernel within kAlternativeInPlay of the unfused chain: the unfused plan is chosen
  // and the fused kernel, a close second, still draws budget; further behind, it does not.
  ASSERT_EQ(fused_runs, 1);
  const double chain = unfused_runs * 1e-6;
  for (const auto& [ratio, in_play] : {std::pair<double, bool>{1.03, true}, {1.2, false}}) {
    const onnx::PlanCost close =
        onnx::CostPlan(weights, analysis->plan_choices, [&](const std::string& key) {
          return std::optional<double>(key == fused_key ? ratio * chain : 1e-6);
        });
    EXPECT_EQ(close.chosen, (std::vector<int>{1})) << ratio;
    EXPECT_EQ(tuning_weight(close, fused_key), in_play ? weight[fused_key] : 0) << ratio;
    for (const std::string& key : unfused_only) {
      EXPECT_EQ(tuning_weight(close, key), weight[key]) << ratio << " " << key;
    }
  }
}

}  // namespace
}  // namespace gtco::graph
