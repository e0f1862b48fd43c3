// The whole-model check at export and the fallback steps: an artifact is compared with the
// reference interpreter of its ONNX graph before it is handed back; a broken graph rewrite is
// caught and its node named; ops without a kernel family run as fallback steps and are checked
// like the rest.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "common/export/model_export.h"
#include "common/graph/batchnorm_folding.h"
#include "common/target/target.h"
#include "common/verify/graph_check.h"
#include "runtime/artifact.h"
#include "runtime/model.h"
#include "tests/unit/export/export_test_util.h"
#include "tests/unit/export/test_graph.h"
#include "tests/unit/scratch_dir.h"

namespace gtco::exporter {
namespace {

using gtco::testing::TestGraph;

/// Conv (3 -> 8 channels, 3x3) -> BatchNormalization -> Relu -> Conv (8 -> 4, 1x1): the first
/// BatchNormalization folds into the conv before it.
std::string ConvBatchNormModel() {
  TestGraph g("conv_bn");
  g.Input("image", {1, 3, 12, 12});
  g.Conv("conv1", "image", "c1", 3, 8, 3, 1, 1);
  g.WeightValues("bn_scale", {8}, {1.0f, 0.5f, 2.0f, 1.5f, 0.8f, 1.2f, 0.9f, 1.1f});
  g.WeightValues("bn_bias", {8}, {0.1f, -0.2f, 0.3f, 0.0f, 0.05f, -0.1f, 0.2f, 0.4f});
  g.WeightValues("bn_mean", {8}, {0.01f, 0.02f, -0.03f, 0.0f, 0.1f, -0.1f, 0.05f, 0.0f});
  g.WeightValues("bn_var", {8}, {1.0f, 0.9f, 1.1f, 1.2f, 0.8f, 1.0f, 1.3f, 0.7f});
  g.Node("BatchNormalization", "bn1", {"c1", "bn_scale", "bn_bias", "bn_mean", "bn_var"}, "b1");
  g.Node("Relu", "relu1", {"b1"}, "r1");
  g.Conv("conv2", "r1", "out", 8, 4, 1, 1, 0);
  g.Output("out", {1, 4, 12, 12});
  return g.Bytes();
}

/// Ops no kernel family runs as they are, between tuned convs: HardSwish and a ReduceMean over
/// the spatial axes (keepdims 0), which are rewritten into kernels' ops; a reflect Pad, Resize
/// (nearest, x2) and Log of a Sigmoid, which run as fallback steps.
std::string FallbackModel() {
  TestGraph g("fallbacks");
  g.Input("image", {1, 4, 8, 8});
  g.Conv("conv1", "image", "c1", 4, 8, 3, 1, 1);
  g.Node("HardSwish", "hswish", {"c1"}, "h1");
  g.IntValues("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  ::onnx::NodeProto* pad = g.Node("Pad", "pad", {"h1", "pads"}, "p1");
  TestGraph::String(pad, "mode", "reflect");
  g.Conv("conv2", "p1", "c2", 8, 8, 3, 1, 0);
  g.WeightValues("scales", {4}, {1.0f, 1.0f, 2.0f, 2.0f});
  ::onnx::NodeProto* resize = g.Node("Resize", "resize", {"c2", "", "scales"}, "up");
  TestGraph::String(resize, "mode", "nearest");
  g.Node("Sigmoid", "sigmoid", {"up"}, "s1");
  g.Node("Log", "log", {"s1"}, "l1");
  ::onnx::NodeProto* mean = g.Node("ReduceMean", "mean", {"l1"}, "pooled");
  TestGraph::Ints(mean, "axes", {2, 3});
  TestGraph::Int(mean, "keepdims", 0);
  g.Output("pooled", {1, 8});
  return g.Bytes();
}

TEST(ExportVerificationTest, APassingCheckIsRecordedInTheManifest) {
  absl::StatusOr<ExportResult> result =
      ExportModel(ConvBatchNormModel(), {}, HostOptions(), kNoRecords);
  ASSERT_TRUE(result.ok()) << result.status();
  absl::StatusOr<runtime::ArtifactView> view = runtime::ReadArtifact(result->artifact);
  ASSERT_TRUE(view.ok()) << view.status();
  const runtime::VerificationSpec& check = view->manifest.verification;
  EXPECT_EQ(check.status, "passed");
  EXPECT_EQ(check.seed, verify::kDefaultSeed);
  EXPECT_EQ(check.input_sets, 1);
  ASSERT_EQ(check.outputs.size(), 1u);
  EXPECT_EQ(check.outputs[0].name, "out");
  EXPECT_LE(check.outputs[0].max_error, 1e-5);
  EXPECT_EQ(check.outputs[0].tolerance, 1e-4);
  EXPECT_TRUE(absl::StrContains(check.rule, "1e-4"));
}

// The acceptance check of the check itself: a graph rewrite broken on purpose (the batch-norm
// folding scales its channels wrongly) must stop the export and name the node that diverges.
TEST(ExportVerificationTest, ABrokenRewriteStopsTheExportAndNamesTheNode) {
  graph::BreakBatchNormFoldingForTesting(true);
  absl::StatusOr<ExportResult> result =
      ExportModel(ConvBatchNormModel(), {}, HostOptions(), kNoRecords);
  graph::BreakBatchNormFoldingForTesting(false);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition) << result.status();
  const std::string message(result.status().message());
  EXPECT_TRUE(absl::StrContains(message, "output 'out'")) << message;
  // The conv the batch norm folded into (with the Relu fused after it) is the first to diverge.
  EXPECT_TRUE(absl::StrContains(message, "the first node whose value diverges is 'conv1"))
      << message;
  EXPECT_TRUE(absl::StrContains(message, "No artifact was written")) << message;
  EXPECT_TRUE(absl::StrContains(message, "--no-verify")) << message;
}

// At submit the graph after the passes is checked against the original (both interpreted, no
// kernel compiled), so a broken rewrite is caught before any trial is spent on its plan.
TEST(ExportVerificationTest, TheCheckAtSubmitCatchesABrokenRewriteBeforeTuning) {
  absl::StatusOr<verify::GraphCheck> sound = verify::CheckGraphPasses(ConvBatchNormModel(), {});
  ASSERT_TRUE(sound.ok()) << sound.status();
  EXPECT_TRUE(sound->checked) << sound->reason;
  EXPECT_LE(sound->max_error, 1e-6);
  graph::BreakBatchNormFoldingForTesting(true);
  absl::StatusOr<verify::GraphCheck> broken = verify::CheckGraphPasses(ConvBatchNormModel(), {});
  graph::BreakBatchNormFoldingForTesting(false);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kFailedPrecondition) << broken.status();
  const std::string message(broken.status().message());
  EXPECT_TRUE(absl::StrContains(message, "output 'out'")) << message;
  EXPECT_TRUE(absl::StrContains(message, "the first node whose value diverges is 'conv1'"))
      << message;
}

// The bundled models pass the check at submit, GTCO's own forms included (an integer MatMul
// that took in the Cast after it writes f32; fused QDQ MatMuls).
TEST(ExportVerificationTest, TheBundledModelsPassTheCheckAtSubmit) {
  for (const char* name :
       {"bert_tiny_int8.onnx", "bert_tiny_qdq.onnx", "bert_tiny_fp32.onnx",
        "transformer_block.onnx", "vit_tiny.onnx", "patch_embed_int8.onnx", "fallback_op.onnx"}) {
    SCOPED_TRACE(name);
    std::ifstream file(std::string(GTCO_SOURCE_DIR) + "/tests/data/" + name, std::ios::binary);
    std::stringstream bytes;
    bytes << file.rdbuf();
    absl::StatusOr<verify::GraphCheck> check = verify::CheckGraphPasses(bytes.str(), {});
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_TRUE(check->checked) << check->reason;
  }
}

// DeepLabV3's atrous pyramid on a small map: 3x3 convs dilated past the image (every tap but
// the center reads padding) run as 1x1 convs; a dilation that leaves every tap live somewhere
// keeps its 3x3. The export's check compares with the ONNX graph as written.
TEST(ExportVerificationTest, AtrousConvsWithDeadTapsRunAsSmallerConvs) {
  TestGraph g("atrous");
  g.Input("image", {1, 8, 6, 6});
  for (int64_t dilation : {2, 6, 9}) {
    const std::string name = absl::StrCat("aspp_d", dilation);
    g.Weight(name + "_w", {4, 8, 3, 3});
    g.Weight(name + "_b", {4});
    ::onnx::NodeProto* conv =
        g.Node("Conv", name, {"image", name + "_w", name + "_b"}, name + "_y");
    TestGraph::Ints(conv, "kernel_shape", {3, 3});
    TestGraph::Ints(conv, "pads", {dilation, dilation, dilation, dilation});
    TestGraph::Ints(conv, "dilations", {dilation, dilation});
    g.Node("Relu", name + "_relu", {name + "_y"}, name + "_r");
  }
  ::onnx::NodeProto* cat = g.Node("Concat", "cat", {"aspp_d2_r", "aspp_d6_r", "aspp_d9_r"}, "out");
  TestGraph::Int(cat, "axis", 1);
  g.Output("out", {1, 12, 6, 6});
  absl::StatusOr<ExportResult> result = ExportModel(g.Bytes(), {}, HostOptions(), kNoRecords);
  ASSERT_TRUE(result.ok()) << result.status();
  absl::StatusOr<runtime::ArtifactView> view = runtime::ReadArtifact(result->artifact);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->manifest.verification.status, "passed");
  std::vector<std::string> convs;
  for (const runtime::KernelSpec& kernel : view->manifest.kernels) {
    if (absl::StartsWith(kernel.description, "conv")) convs.push_back(kernel.description);
  }
  ASSERT_EQ(convs.size(), 3u);
  int one_by_one = 0, three_by_three = 0;
  for (const std::string& conv : convs) {
    one_by_one += absl::StrContains(conv, " 1x1 s1 p0 ");
    three_by_three += absl::StrContains(conv, " 3x3 s1 p2 d2,2 ");
  }
  EXPECT_EQ(one_by_one, 2) << absl::StrJoin(convs, "; ");
  EXPECT_EQ(three_by_three, 1) << absl::StrJoin(convs, "; ");
}

// A Pad of all-zero amounts before an average pool (DenseNet's transitions) and a Dropout of
// ratio 0 in training mode (Swin-T's) are no steps at all.
// DeepLabV3's ASPP 3x3 of dilation 12 on a 14x14 map: its off-centre taps reach the image for
// 2 of 14 rows or columns only, so it runs as the convs that reach it (the centre tap over
// every pixel, the other taps over the strips they reach), checked against the ONNX graph.
TEST(ExportVerificationTest, SparseAtrousConvsRunAsTheConvsThatReachTheImage) {
  TestGraph g("aspp");
  g.Input("features", {1, 8, 14, 14});
  ::onnx::NodeProto* conv = g.Node("Conv", "atrous", {"features", "atrous_w", "atrous_b"}, "c");
  g.Weight("atrous_w", {16, 8, 3, 3});
  g.Weight("atrous_b", {16});
  TestGraph::Ints(conv, "kernel_shape", {3, 3});
  TestGraph::Ints(conv, "pads", {12, 12, 12, 12});
  TestGraph::Ints(conv, "dilations", {12, 12});
  g.Node("Relu", "relu", {"c"}, "out");
  g.Output("out", {1, 16, 14, 14});
  absl::StatusOr<ExportResult> result = ExportModel(g.Bytes(), {}, HostOptions(), kNoRecords);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->fallbacks.empty());
  absl::StatusOr<runtime::ArtifactView> view = runtime::ReadArtifact(result->artifact);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->manifest.verification.status, "passed");
  int convs = 0;
  for (const runtime::StepSpec& step : view->manifest.steps) {
    if (step.kernel < 0) continue;
    const std::string& description = view->manifest.kernels[step.kernel].description;
    convs += absl::StrContains(description, "conv") ? 1 : 0;
    EXPECT_FALSE(absl::StrContains(description, "3x3")) << description;
  }
  EXPECT_EQ(convs, 5);  // the centre, left, right, top and bottom convs
}

TEST(ExportVerificationTest, AZeroPadAndARatioZeroDropoutAreNoSteps) {
  TestGraph g("zero_pad");
  g.Input("image", {1, 8, 6, 6});
  g.IntValues("pads", {8}, {0, 0, 0, 0, 0, 0, 0, 0});
  ::onnx::NodeProto* pad = g.Node("Pad", "pad", {"image", "pads"}, "padded");
  TestGraph::String(pad, "mode", "constant");
  g.WeightValues("ratio", {}, {0.0f});
  g.BoolValues("training", {}, {true});
  g.Node("Dropout", "dropout", {"padded", "ratio", "training"}, "kept");
  ::onnx::NodeProto* pool = g.Node("AveragePool", "pool", {"kept"}, "out");
  TestGraph::Ints(pool, "kernel_shape", {2, 2});
  TestGraph::Ints(pool, "strides", {2, 2});
  g.Output("out", {1, 8, 3, 3});
  absl::StatusOr<ExportResult> result = ExportModel(g.Bytes(), {}, HostOptions(), kNoRecords);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->fallbacks.empty());
  absl::StatusOr<runtime::ArtifactView> view = runtime::ReadArtifact(result->artifact);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->manifest.verification.status, "passed");
  for (const runtime::StepSpec& step : view->manifest.steps) EXPECT_NE(step.op, "reference");
}

// DistilBERT's attention mask: Equal(mask, 0) -> Expand over heads and query rows -> Where
// (masked, a large negative, scores), each a broadcasting data step, checked against the ONNX
// graph (runs of the innermost dim that are contiguous, repeated or strided).
TEST(ExportVerificationTest, MaskStepsBroadcastAsTheGraphSays) {
  TestGraph g("mask");
  g.Input("scores", {1, 3, 5, 7});
  g.Input("mask", {1, 1, 1, 7});
  g.Input("rows", {1, 1, 5, 1});
  g.WeightValues("zero", {}, {0.0f});
  g.WeightValues("fill", {}, {-1e4f});
  g.IntValues("shape", {4}, {1, 3, 5, 7});
  g.Node("Equal", "is_pad", {"mask", "zero"}, "pad");
  g.Node("Expand", "expand", {"pad", "shape"}, "pad_all");
  g.Node("Where", "masked", {"pad_all", "fill", "scores"}, "masked_scores");
  g.Node("Expand", "expand_rows", {"rows", "shape"}, "rows_all");
  g.Node("Add", "add", {"masked_scores", "rows_all"}, "out");
  g.Output("out", {1, 3, 5, 7});
  ExportOptions options = HostOptions();
  // Half the mask's positions are padding in the user's inputs (random ones are rarely 0).
  verify::Value mask;
  mask.dtype = runtime::ElemType::kF32;
  mask.shape = {1, 1, 1, 7};
  mask.data = {1, 0, 1, 1, 0, 0, 1};
  options.verify_options.user_sets.push_back({{"mask", mask}});
  absl::StatusOr<ExportResult> result = ExportModel(g.Bytes(), {}, options, kNoRecords);
  ASSERT_TRUE(result.ok()) << result.status();
  absl::StatusOr<runtime::ArtifactView> view = runtime::ReadArtifact(result->artifact);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->manifest.verification.status, "passed");
  std::set<std::string> ops;
  for (const runtime::StepSpec& step : view->manifest.steps) ops.insert(step.op);
  for (const char* op : {"equal", "expand", "where"}) EXPECT_EQ(ops.count(op), 1u) << op;
}

// Llama's rotary embedding rotates half of each head: Concat(-x[..., half:], x[..., :half]);
// Neg (and Exp) run as tuned element-wise kernels, not fallback steps, and the check passes.
TEST(ExportVerificationTest, NegAndExpRunAsTunedKernels) {
  TestGraph g("rotate_half");
  g.Input("x", {1, 2, 6, 8});
  g.Weight("w", {8, 8});
  g.Node("MatMul", "project", {"x", "w"}, "q");
  g.IntValues("half", {1}, {4});
  g.IntValues("end", {1}, {8});
  g.IntValues("start", {1}, {0});
  g.IntValues("axis", {1}, {3});
  g.Node("Slice", "upper", {"q", "half", "end", "axis"}, "q2");
  g.Node("Slice", "lower", {"q", "start", "half", "axis"}, "q1");
  g.Node("Neg", "negate", {"q2"}, "minus_q2");
  ::onnx::NodeProto* concat = g.Node("Concat", "rotate", {"minus_q2", "q1"}, "rotated");
  TestGraph::Int(concat, "axis", -1);
  g.Node("Exp", "exp", {"rotated"}, "out");
  g.Output("out", {1, 2, 6, 8});
  absl::StatusOr<ExportResult> result = ExportModel(g.Bytes(), {}, HostOptions(), kNoRecords);
  ASSERT_TRUE(result.ok()) << result.status();
  for (const graph::FallbackNode& node : result->fallbacks) {
    ADD_FAILURE() << node.op_type << " at '" << node.node
                  << "' is a fallback step: " << node.reason;
  }
  absl::StatusOr<runtime::ArtifactView> view = runtime::ReadArtifact(result->artifact);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->manifest.verification.status, "passed");
  for (const runtime::StepSpec& step : view->manifest.steps) EXPECT_NE(step.op, "reference");
}

// ReduceMean and ReduceSum over axes that are not the last dims (BEiT's mean over the patch
// tokens, a sum over the first and last of three) are row reductions after a transpose: tuned
// kernels, no fallback step, checked against the ONNX graph.
TEST(ExportVerificationTest, ReductionsOverAnyAxesRunAsRowReductions) {
  TestGraph g("reductions");
  g.Input("tokens", {1, 6, 8});
  ::onnx::NodeProto* mean = g.Node("ReduceMean", "pool_tokens", {"tokens"}, "pooled");
  TestGraph::Ints(mean, "axes", {1});
  TestGraph::Int(mean, "keepdims", 0);
  g.Output("pooled", {1, 8});
  g.Input("cube", {2, 3, 4});
  ::onnx::NodeProto* sum = g.Node("ReduceSum", "sum_ends", {"cube"}, "ends");
  g.IntValues("sum_axes", {2}, {0, 2});
  sum->add_input("sum_axes");
  g.Output("ends", {1, 3, 1});
  absl::StatusOr<ExportResult> result = ExportModel(g.Bytes(), {}, HostOptions(), kNoRecords);
  ASSERT_TRUE(result.ok()) << result.status();
  for (const graph::FallbackNode& node : result->fallbacks) {
    ADD_FAILURE() << node.op_type << " at '" << node.node
                  << "' is a fallback step: " << node.reason;
  }
  EXPECT_EQ(result->verification.spec.status, "passed");
}

/// The arena offset of tensor `name` of `m` (-1 when it is not in the arena).
int64_t ArenaOffset(const runtime::Manifest& m, const std::string& name) {
  for (const runtime::TensorSpec& t : m.tensors) {
    if (t.name == name && !t.weight) return m.storages[t.storage].offset;
  }
  return -1;
}

// Channel concats of batch-1 images (SqueezeNet's Fire modules) and a channel slice of one
// cost no copy: the convs write their outputs at their runs of the concat's output, the slice
// is read where it lies. A concat whose runs are not 64-byte aligned, and one along an inner
// axis (a copy in chunks over the runtime's threads), are copied. The check passes.
TEST(ExportVerificationTest, ChannelConcatsAndSlicesOfBatchOneAreViews) {
  TestGraph g("views");
  g.Input("image", {1, 8, 8, 8});
  g.Conv("expand3x3", "image", "a", 8, 16, 3, 1, 1);
  g.Conv("expand1x1", "image", "b", 8, 16, 1, 1, 0);
  ::onnx::NodeProto* cat = g.Node("Concat", "cat", {"a", "b"}, "fire");
  TestGraph::Int(cat, "axis", 1);
  g.IntValues("from", {1}, {16});
  g.IntValues("to", {1}, {32});
  g.IntValues("channels", {1}, {1});
  g.Node("Slice", "upper", {"fire", "from", "to", "channels"}, "upper_half");
  g.Conv("head", "upper_half", "out", 16, 4, 1, 1, 0);
  g.Conv("tail", "fire", "wide", 32, 3, 1, 1, 0);
  ::onnx::NodeProto* twice = g.Node("Concat", "twice", {"wide", "wide"}, "doubled");
  TestGraph::Int(twice, "axis", 1);
  g.Output("out", {1, 4, 8, 8});
  g.Output("doubled", {1, 6, 8, 8});
  g.Input("small", {1, 3, 7, 7});  // 3 channels of 49 floats: 588 bytes
  g.Node("Relu", "relu_small", {"small"}, "s1");
  g.Node("Sigmoid", "sigmoid_small", {"small"}, "s2");
  ::onnx::NodeProto* odd = g.Node("Concat", "odd", {"s1", "s2"}, "unaligned");
  TestGraph::Int(odd, "axis", 1);
  g.Output("unaligned", {1, 6, 7, 7});
  g.Input("rows", {1, 16, 64, 64});
  g.Node("Relu", "relu_rows", {"rows"}, "top");
  g.Node("Sigmoid", "sigmoid_rows", {"rows"}, "bottom");
  ::onnx::NodeProto* tall = g.Node("Concat", "tall", {"top", "bottom"}, "stacked");
  TestGraph::Int(tall, "axis", 2);
  g.Output("stacked", {1, 16, 128, 64});
  absl::StatusOr<ExportResult> result = ExportModel(g.Bytes(), {}, HostOptions(), kNoRecords);
  ASSERT_TRUE(result.ok()) << result.status();
  absl::StatusOr<runtime::ArtifactView> view = runtime::ReadArtifact(result->artifact);
  ASSERT_TRUE(view.ok()) << view.status();
  const runtime::Manifest& m = view->manifest;
  EXPECT_EQ(m.verification.status, "passed");
  const int64_t fire = ArenaOffset(m, "fire");
  ASSERT_GE(fire, 0);
  EXPECT_EQ(ArenaOffset(m, "a"), fire);
  EXPECT_EQ(ArenaOffset(m, "b"), fire + 16 * 64 * 4);
  EXPECT_EQ(ArenaOffset(m, "upper_half"), fire + 16 * 64 * 4);
  // Copied: "wide" twice, a second run at byte 588, rows of an inner axis.
  EXPECT_NE(ArenaOffset(m, "wide"), ArenaOffset(m, "doubled"));
  EXPECT_NE(ArenaOffset(m, "s1"), ArenaOffset(m, "unaligned"));
  EXPECT_NE(ArenaOffset(m, "top"), ArenaOffset(m, "stacked"));
  // The artifact's own run matches the check's: a second run through the runtime, "stacked"
  // holding relu(rows) above sigmoid(rows).
  const std::string path = gtco::testing::ScratchPath("views.gtco");
  std::ofstream(path, std::ios::binary) << result->artifact;
  absl::StatusOr<std::unique_ptr<runtime::Model>> model = runtime::Model::Load(path);
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<float> image(8 * 8 * 8, 0.5f), small(3 * 49, -0.25f), rows(16 * 64 * 64);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>(i % 7) - 3.0f;
  std::vector<runtime::HostTensor> inputs;
  for (int input : m.inputs) {
    const std::string& name = m.tensors[input].name;
    inputs.push_back({runtime::ElemType::kF32, m.tensors[input].shape,
                      name == "image"   ? image.data()
                      : name == "small" ? small.data()
                                        : rows.data()});
  }
  absl::StatusOr<std::vector<runtime::OutputTensor>> outputs = (*model)->Run(inputs);
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  int checked = 0;
  for (const runtime::OutputTensor& output : *outputs) {
    if (output.name != "stacked") continue;
    ++checked;
    ASSERT_EQ(output.bytes.size(), size_t{16 * 128 * 64 * 4});
    const float* stacked = reinterpret_cast<const float*>(output.bytes.data());
    for (int64_t c = 0; c < 16; ++c) {
      for (int64_t i = 0; i < 64 * 64; ++i) {
        const float x = rows[c * 4096 + i];
        ASSERT_EQ(stacked[c * 8192 + i], std::max(x, 0.0f)) << c << "," << i;
        ASSERT_NEAR(stacked[c * 8192 + 4096 + i], 1.0f / (1.0f + std::exp(-x)), 1e-6)
            << c << "," << i;
      }
    }
  }
  EXPECT_EQ(checked, 1);
}

TEST(ExportVerificationTest, NoVerifySkipsTheCheckAndSaysSo) {
  ExportOptions options = HostOptions();
  options.verify = false;
  graph::BreakBatchNormFoldingForTesting(true);
  absl::StatusOr<ExportResult> result = ExportModel(ConvBatchNormModel(), {}, options, kNoRecords);
  graph::BreakBatchNormFoldingForTesting(false);
  ASSERT_TRUE(result.ok()) << result.status();
  absl::StatusOr<runtime::ArtifactView> view = runtime::ReadArtifact(result->artifact);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->manifest.verification.status, "skipped");
  EXPECT_EQ(view->manifest.verification.reason, "--no-verify");
}

TEST(ExportVerificationTest, UserInputsAreCheckedBesideRandomOnes) {
  ExportOptions options = HostOptions();
  verify::Value image;
  image.dtype = runtime::ElemType::kF32;
  image.shape = {1, 3, 12, 12};
  image.data.assign(3 * 12 * 12, 0.25);
  options.verify_options.user_sets.push_back({{"image", image}});
  absl::StatusOr<ExportResult> result = ExportModel(ConvBatchNormModel(), {}, options, kNoRecords);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->verification.spec.input_sets, 2);
  // A user input of the wrong shape is the user's error, named.
  image.shape = {1, 3, 10, 10};
  image.data.assign(300, 0.25);
  options.verify_options.user_sets = {{{"image", image}}};
  result = ExportModel(ConvBatchNormModel(), {}, options, kNoRecords);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << result.status();
  EXPECT_TRUE(absl::StrContains(result.status().message(), "'image'")) << result.status();
}

TEST(ExportVerificationTest, OpsWithoutAKernelFamilyRunAsCheckedFallbackSteps) {
  absl::StatusOr<ExportResult> result = ExportModel(FallbackModel(), {}, HostOptions(), kNoRecords);
  ASSERT_TRUE(result.ok()) << result.status();
  std::set<std::string> fallback_ops;
  for (const graph::FallbackNode& node : result->fallbacks) {
    fallback_ops.insert(node.op_type);
    EXPECT_FALSE(node.reason.empty()) << node.node;
  }
  for (const char* op : {"Pad", "Resize", "Log"}) {
    EXPECT_TRUE(fallback_ops.count(op)) << op << " should run as a fallback step";
  }
  // HardSwish becomes a fused epilogue and the spatial ReduceMean a row reduction: tuned kernels.
  for (const char* op : {"Conv", "HardSwish", "ReduceMean"}) {
    EXPECT_FALSE(fallback_ops.count(op)) << op << " should run as a tuned kernel";
  }
  EXPECT_EQ(result->verification.spec.status, "passed");
  ASSERT_EQ(result->verification.fallbacks.size(), result->fallbacks.size());
  EXPECT_GT(result->verification.run_seconds, 0);
  const std::string path = gtco::testing::ScratchPath("fallbacks.gtco");
  std::ofstream(path, std::ios::binary) << result->artifact;
  absl::StatusOr<std::unique_ptr<runtime::Model>> model = runtime::Model::Load(path);
  ASSERT_TRUE(model.ok()) << model.status();
  int reference_steps = 0;
  for (const runtime::StepSpec& step : (*model)->manifest().steps) {
    reference_steps += step.op == "reference" ? 1 : 0;
  }
  EXPECT_EQ(reference_steps, static_cast<int>(result->fallbacks.size()));
  std::vector<float> image(4 * 64, 0.5f);
  absl::StatusOr<std::vector<runtime::OutputTensor>> outputs =
      (*model)->Run({{runtime::ElemType::kF32, {1, 4, 8, 8}, image.data()}});
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  ASSERT_EQ(outputs->size(), 1u);
  const float* pooled = reinterpret_cast<const float*>((*outputs)[0].bytes.data());
  for (int c = 0; c < 8; ++c) {
    EXPECT_TRUE(std::isfinite(pooled[c]));
    EXPECT_LT(pooled[c], 0.0f);  // the mean of logs of sigmoids
  }
}

TEST(ExportVerificationTest, CudaExportsRefuseFallbackStepsNamingTheNode) {
  ExportOptions options;
  options.target = target::Target::kCuda;
  absl::StatusOr<ExportResult> result = ExportModel(FallbackModel(), {}, options, kNoRecords);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnimplemented) << result.status();
  EXPECT_TRUE(absl::StrContains(result.status().message(), "--target cpu")) << result.status();
  EXPECT_TRUE(absl::StrContains(result.status().message(), "at node '")) << result.status();
}

}  // namespace
}  // namespace gtco::exporter
