// Tests of the bf16 rewrite of an f32 model's weight MatMuls (common/onnx/mixed_precision.h,
// gtco-client --precision bf16): what it rewrites, what it leaves, and the models it refuses.
#include "common/onnx/mixed_precision.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/graph/bf16x3_split.h"
#include "common/graph/fallback.h"
#include "common/onnx/model_analysis.h"
#include "common/onnx/onnx_import.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "tests/unit/onnx/test_models.h"

namespace gtco::onnx {
namespace {

using testing::IsBf16Value;
using testing::ReadModel;

/// A model of one input X [4, 8] and the given nodes and 2-D f32 initializers ([8, 8] each,
/// raw_data unless `float_data`); output "Y" [4, 8].
::onnx::ModelProto SmallModel(const std::vector<::onnx::NodeProto>& nodes,
                              const std::vector<std::string>& weights, int opset = 17,
                              bool float_data = false, int64_t rows = 4) {
  ::onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(opset);
  ::onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("small");
  for (const ::onnx::NodeProto& node : nodes) *graph->add_node() = node;
  auto value_info = [rows](::onnx::ValueInfoProto* info, const std::string& name) {
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(::onnx::TensorProto::FLOAT);
    if (rows > 0) {
      tensor->mutable_shape()->add_dim()->set_dim_value(rows);
    } else {
      tensor->mutable_shape()->add_dim()->set_dim_param("rows");
    }
    tensor->mutable_shape()->add_dim()->set_dim_value(8);
  };
  value_info(graph->add_input(), "X");
  value_info(graph->add_output(), "Y");
  for (const std::string& name : weights) {
    ::onnx::TensorProto* w = graph->add_initializer();
    w->set_name(name);
    w->set_data_type(::onnx::TensorProto::FLOAT);
    w->add_dims(8);
    w->add_dims(8);
    std::vector<float> values(64);
    for (int i = 0; i < 64; ++i) values[i] = 0.01f * static_cast<float>(i) - 0.3f;
    if (float_data) {
      for (float v : values) w->add_float_data(v);
    } else {
      w->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), 256));
    }
  }
  return model;
}

::onnx::NodeProto Node(const std::string& op, std::vector<std::string> inputs,
                       const std::string& output, bool trans_b = false) {
  ::onnx::NodeProto node;
  node.set_op_type(op);
  node.set_name(output + "_node");
  for (const std::string& input : inputs) node.add_input(input);
  node.add_output(output);
  if (trans_b) {
    auto* attribute = node.add_attribute();
    attribute->set_name("transB");
    attribute->set_type(::onnx::AttributeProto::INT);
    attribute->set_i(1);
  }
  return node;
}

std::string Bytes(const ::onnx::ModelProto& model) {
  std::string bytes;
  model.SerializeToString(&bytes);
  return bytes;
}

/// Node op types of rewritten model bytes, in order, and its initializers' names.
std::pair<std::vector<std::string>, std::vector<std::string>> Contents(const std::string& bytes) {
  ::onnx::ModelProto model;
  model.ParseFromString(bytes);
  std::vector<std::string> ops, initializers;
  for (const auto& node : model.graph().node()) ops.push_back(node.op_type());
  for (const auto& tensor : model.graph().initializer()) initializers.push_back(tensor.name());
  return {ops, initializers};
}

// --precision bf16 on the transformer block: each MatMul with a constant weight becomes a bf16 x
// bf16 workload writing f32 with its bias / GELU / residual epilogue intact; attention's
// MatMuls (two computed operands) stay f32; the weights are bf16-rounded copies of the f32 ones.
TEST(MixedPrecisionTest, WeightMatMulsRunOnBf16WithTheirEpilogues) {
  const std::string bytes = ReadModel("transformer_block.onnx");
  ASSERT_FALSE(bytes.empty());
  absl::StatusOr<ModelAnalysis> f32 = AnalyzeOnnxModel(bytes, {});
  ASSERT_TRUE(f32.ok()) << f32.status();
  absl::StatusOr<Bf16Rewrite> rewritten = RewriteMatMulsToBf16(bytes);
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  EXPECT_GE(rewritten->matmuls, 4);
  EXPECT_EQ(rewritten->weights, rewritten->matmuls);
  EXPECT_LT(rewritten->model_bytes.size(), bytes.size()) << "weights in half the bytes";
  absl::StatusOr<ModelAnalysis> bf16 = AnalyzeOnnxModel(rewritten->model_bytes, {});
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  ASSERT_EQ(bf16->tasks.size(), f32->tasks.size());
  int bf16_matmuls = 0, f32_matmuls = 0;
  for (size_t i = 0; i < bf16->tasks.size(); ++i) {
    const ir::Workload& w = bf16->tasks[i].workload;
    const ir::Workload& before = f32->tasks[i].workload;
    SCOPED_TRACE(w.Description());
    EXPECT_EQ(w.anchor, before.anchor);
    EXPECT_EQ(w.epilogue.size(), before.epilogue.size()) << "the epilogue stays fused";
    EXPECT_EQ(w.output.dtype, ir::DType::kF32);
    if (w.anchor != ir::AnchorKind::kMatMul) continue;
    if (w.inputs[0].dtype == ir::DType::kBF16) {
      EXPECT_EQ(w.inputs[1].dtype, ir::DType::kBF16);
      ++bf16_matmuls;
    } else {
      EXPECT_EQ(w.inputs[1].dtype, ir::DType::kF32);
      ++f32_matmuls;
    }
  }
  EXPECT_GE(bf16_matmuls, 4);
  // One Cast to bf16 per distinct activation a weight MatMul reads: runtime data steps.
  EXPECT_GT(bf16->num_data_ops, f32->num_data_ops);

  // The weights: bf16 values within half a bf16 ulp of the f32 ones.
  absl::StatusOr<graph::Graph> before = ImportOnnx(bytes, {});
  absl::StatusOr<graph::Graph> after = ImportOnnx(rewritten->model_bytes, {});
  ASSERT_TRUE(before.ok() && after.ok());
  int checked = 0;
  for (const auto& [name, tensor] : after->tensors()) {
    if (!tensor.is_constant || tensor.type != graph::ElemType::kBFloat16) continue;
    const std::string source = name.substr(0, name.rfind("_bf16"));
    ASSERT_NE(before->FindTensor(source), nullptr) << name;
    const graph::Tensor& original = before->tensor(source);
    ASSERT_EQ(original.float_data.size(), tensor.float_data.size());
    for (size_t i = 0; i < tensor.float_data.size(); ++i) {
      EXPECT_TRUE(IsBf16Value(tensor.float_data[i]));
      EXPECT_LE(std::fabs(tensor.float_data[i] - original.float_data[i]),
                std::fabs(original.float_data[i]) / 256.0)
          << name << "[" << i << "]";
    }
    ++checked;
  }
  EXPECT_EQ(checked, rewritten->weights);
}

// A Gemm with transB (the mlp's layers) becomes MatMul of the weight stored [K, N] in bf16, a Cast
// and an Add of the bias: one bf16 workload with the bias in its epilogue.
TEST(MixedPrecisionTest, PlainGemmsBecomeBf16MatMulsAndAnAddOfTheBias) {
  const std::string mlp = ReadModel("mlp.onnx");
  absl::StatusOr<Bf16Rewrite> gemms = RewriteMatMulsToBf16(mlp);
  ASSERT_TRUE(gemms.ok()) << gemms.status();
  absl::StatusOr<ModelAnalysis> mlp_f32 = AnalyzeOnnxModel(mlp, {});
  absl::StatusOr<ModelAnalysis> mlp_bf16 = AnalyzeOnnxModel(gemms->model_bytes, {});
  ASSERT_TRUE(mlp_f32.ok() && mlp_bf16.ok()) << mlp_bf16.status();
  ASSERT_EQ(mlp_bf16->tasks.size(), mlp_f32->tasks.size());
  int matmuls = 0;
  for (size_t i = 0; i < mlp_bf16->tasks.size(); ++i) {
    const ir::Workload& w = mlp_bf16->tasks[i].workload;
    const ir::Workload& was = mlp_f32->tasks[i].workload;
    if (w.anchor != ir::AnchorKind::kMatMul) continue;
    ++matmuls;
    SCOPED_TRACE(w.Description());
    EXPECT_EQ(w.inputs[0].dtype, ir::DType::kBF16);
    EXPECT_EQ(w.matmul.n, was.matmul.n);
    EXPECT_EQ(w.matmul.k, was.matmul.k);
    EXPECT_FALSE(w.matmul.trans_b) << "the transposed weight is stored [K, N]";
    EXPECT_EQ(w.epilogue.size(), was.epilogue.size());
  }
  EXPECT_EQ(matmuls, 2) << "the mlp's two Gemms";
}

// One weight read by a MatMul and by a transposed Gemm gets two bf16 copies ([K, N] each); the
// activation both read is cast once; float_data weights convert too; the rewritten model imports
// and plans.
TEST(MixedPrecisionTest, SharedWeightsAndActivationsAreConvertedOncePerLayout) {
  const std::string bytes = Bytes(
      SmallModel({Node("MatMul", {"X", "W"}, "P"), Node("Gemm", {"X", "W"}, "Q", /*trans_b=*/true),
                  Node("Add", {"P", "Q"}, "Y")},
                 {"W"}, 17, /*float_data=*/true));
  absl::StatusOr<Bf16Rewrite> rewritten = RewriteMatMulsToBf16(bytes);
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  EXPECT_EQ(rewritten->matmuls, 2);
  EXPECT_EQ(rewritten->weights, 2);
  const auto [ops, initializers] = Contents(rewritten->model_bytes);
  EXPECT_EQ(ops, (std::vector<std::string>{"Cast", "MatMul", "Cast", "MatMul", "Cast", "Add"}));
  EXPECT_EQ(initializers, (std::vector<std::string>{"W_bf16", "W_t_bf16"})) << "W itself goes";
  absl::StatusOr<ModelAnalysis> analysis = AnalyzeOnnxModel(rewritten->model_bytes, {});
  ASSERT_TRUE(analysis.ok()) << analysis.status();
}

// Weights that stay f32: one another node also reads (kept, beside its bf16 copy), one that is
// also a graph input (an overridable default: not rewritten), one in external data.
TEST(MixedPrecisionTest, WeightsOthersReadOrMayOverrideStayF32) {
  ::onnx::ModelProto model =
      SmallModel({Node("MatMul", {"X", "W"}, "P"), Node("Add", {"P", "W"}, "R"),
                  Node("MatMul", {"R", "V"}, "S"), Node("MatMul", {"S", "E"}, "Y")},
                 {"W", "V", "E"});
  *model.mutable_graph()->add_input() = model.graph().input(0);
  model.mutable_graph()->mutable_input(1)->set_name("V");
  ::onnx::TensorProto* external = model.mutable_graph()->mutable_initializer(2);
  external->clear_raw_data();
  external->set_data_location(::onnx::TensorProto::EXTERNAL);
  absl::StatusOr<Bf16Rewrite> rewritten = RewriteMatMulsToBf16(Bytes(model));
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  EXPECT_EQ(rewritten->matmuls, 1);
  EXPECT_EQ(rewritten->kept_f32, 2);
  const auto [ops, initializers] = Contents(rewritten->model_bytes);
  EXPECT_EQ(initializers, (std::vector<std::string>{"W", "V", "E", "W_bf16"}));
}

// Models the rewrite refuses, saying why: below opset 13, with subgraphs.
TEST(MixedPrecisionTest, OldOpsetsAndSubgraphsAreRefused) {
  const std::vector<::onnx::NodeProto> nodes = {Node("MatMul", {"X", "W"}, "Y")};
  absl::StatusOr<Bf16Rewrite> old = RewriteMatMulsToBf16(Bytes(SmallModel(nodes, {"W"}, 11)));
  EXPECT_EQ(old.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(old.status().message().find("opset 11"), std::string::npos) << old.status();
  ::onnx::ModelProto branchy = SmallModel(nodes, {"W"});
  ::onnx::NodeProto* node = branchy.mutable_graph()->mutable_node(0);
  auto* attribute = node->add_attribute();
  attribute->set_name("then_branch");
  attribute->set_type(::onnx::AttributeProto::GRAPH);
  attribute->mutable_g()->set_name("body");
  absl::StatusOr<Bf16Rewrite> sub = RewriteMatMulsToBf16(Bytes(branchy));
  EXPECT_EQ(sub.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(sub.status().message().find("subgraphs"), std::string::npos) << sub.status();
  // The f32 model itself is fine.
  EXPECT_TRUE(RewriteMatMulsToBf16(Bytes(SmallModel(nodes, {"W"}))).ok());
}

/// `value` rounded to bf16 (nearest, ties to even), back in f32: what the runtime's Cast does.
float RoundToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  float rounded;
  std::memcpy(&rounded, &bits, 4);
  return rounded;
}

// --precision bf16x3: the weight is stored [B_hi; B_hi; B_lo] ([3K, N], from a transposed Gemm's
// weight too) and the activation split into [A_hi | A_lo | A_hi] (Cast, Cast back, Sub, Cast,
// Concat: once for both readers), so that the bf16 product over 3K is A_hi B_hi + A_lo B_hi +
// A_hi B_lo: within ~2^-16 of the f32 product, where one bf16 product is ~2^-8 off.
TEST(MixedPrecisionTest, Bf16x3SplitsWeightsAndActivationsIntoThreeProducts) {
  const std::string bytes = Bytes(
      SmallModel({Node("MatMul", {"X", "W"}, "P"), Node("Gemm", {"X", "W"}, "Q", /*trans_b=*/true),
                  Node("Add", {"P", "Q"}, "Y")},
                 {"W"}, 17, false, /*rows=*/16));
  absl::StatusOr<Bf16Rewrite> rewritten = RewriteMatMulsToBf16(bytes, Bf16Precision::kBf16x3);
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  EXPECT_EQ(rewritten->matmuls, 2);
  EXPECT_EQ(rewritten->weights, 2);
  const auto [ops, initializers] = Contents(rewritten->model_bytes);
  EXPECT_EQ(ops, (std::vector<std::string>{"Cast", "Cast", "Sub", "Cast", "Concat", "MatMul",
                                           "Cast", "MatMul", "Cast", "Add"}));
  EXPECT_EQ(initializers, (std::vector<std::string>{"W_bf16x3", "W_t_bf16x3"}));

  absl::StatusOr<graph::Graph> before = ImportOnnx(bytes, {});
  absl::StatusOr<graph::Graph> after = ImportOnnx(rewritten->model_bytes, {});
  ASSERT_TRUE(before.ok() && after.ok()) << after.status();
  const std::vector<double>& w = before->tensor("W").float_data;  // [8, 8]
  for (const bool transposed : {false, true}) {
    SCOPED_TRACE(transposed ? "Gemm transB" : "MatMul");
    const graph::Tensor& split = after->tensor(transposed ? "W_t_bf16x3" : "W_bf16x3");
    ASSERT_EQ(split.type, graph::ElemType::kBFloat16);
    ASSERT_EQ(split.shape, (std::vector<int64_t>{24, 8}));
    // B [K, N] of the product (the Gemm's is W^T) and its stored parts.
    auto b = [&](int k, int n) { return transposed ? w[n * 8 + k] : w[k * 8 + n]; };
    auto part = [&](int which, int k, int n) { return split.float_data[(which * 8 + k) * 8 + n]; };
    for (int k = 0; k < 8; ++k) {
      for (int n = 0; n < 8; ++n) {
        EXPECT_TRUE(IsBf16Value(part(2, k, n)));
        EXPECT_EQ(part(0, k, n), part(1, k, n));
        EXPECT_EQ(part(0, k, n), RoundToBf16(static_cast<float>(b(k, n))));
        EXPECT_LE(std::fabs(part(0, k, n) + part(2, k, n) - b(k, n)), std::fabs(b(k, n)) / 65536.0)
            << k << "," << n;
      }
    }
    // One row of A (spanning magnitudes) through the split as the runtime computes it, times the
    // stored B' over 3K, against the f32 product and against a plain bf16 product.
    const std::vector<float> a = {0.7f,  -1.3e-3f,  3.14159f, -25.5f,
                                  1e-2f, 0.333333f, -7.77f,   0.123456f};
    std::vector<float> a3(24);
    for (int k = 0; k < 8; ++k) {
      const float high = RoundToBf16(a[k]);
      a3[k] = a3[16 + k] = high;
      a3[8 + k] = RoundToBf16(a[k] - high);
    }
    double three_off = 0, one_off = 0;  // summed over the columns
    for (int n = 0; n < 8; ++n) {
      double exact = 0, three = 0, one = 0, scale = 0;
      for (int k = 0; k < 8; ++k) {
        exact += static_cast<double>(a[k]) * b(k, n);
        one += static_cast<double>(RoundToBf16(a[k])) * part(0, k, n);
        scale += std::fabs(a[k] * b(k, n));
      }
      for (int k = 0; k < 24; ++k) three += static_cast<double>(a3[k]) * part(k / 8, k % 8, n);
      EXPECT_LE(std::fabs(three - exact), scale / 32768.0) << "column " << n;
      three_off += std::fabs(three - exact);
      one_off += std::fabs(one - exact);
    }
    EXPECT_LE(three_off * 64, one_off) << "three products are not much closer than one";
  }
  // The transformer block: every weight MatMul contracts over 3K in bf16, the epilogues stay;
  // each activation's split is one runtime step (FuseBf16x3Splits), not casts and a Sub task.
  const std::string block = ReadModel("transformer_block.onnx");
  absl::StatusOr<ModelAnalysis> f32 = AnalyzeOnnxModel(block, {});
  absl::StatusOr<Bf16Rewrite> block3 = RewriteMatMulsToBf16(block, Bf16Precision::kBf16x3);
  ASSERT_TRUE(f32.ok() && block3.ok()) << block3.status();
  absl::StatusOr<ModelAnalysis> x3 = AnalyzeOnnxModel(block3->model_bytes, {});
  ASSERT_TRUE(x3.ok()) << x3.status();
  std::vector<int64_t> k_f32, k_x3;
  int residuals = 0;
  for (const auto& task : f32->tasks) {
    const ir::Workload& w = task.workload;
    if (w.anchor == ir::AnchorKind::kMatMul && w.inputs[1].dtype == ir::DType::kF32 &&
        w.matmul.b_batched == false) {
      k_f32.push_back(w.matmul.k);
    }
  }
  for (const auto& task : x3->tasks) {
    const ir::Workload& w = task.workload;
    for (const ir::EwInstr& instr : w.epilogue) residuals += instr.op == ir::EwOp::kSub;
    if (w.anchor != ir::AnchorKind::kMatMul || w.inputs[0].dtype != ir::DType::kBF16) continue;
    EXPECT_EQ(w.inputs[1].dtype, ir::DType::kBF16);
    EXPECT_EQ(w.output.dtype, ir::DType::kF32);
    k_x3.push_back(w.matmul.k / 3);
  }
  std::sort(k_f32.begin(), k_f32.end());
  std::sort(k_x3.begin(), k_x3.end());
  EXPECT_FALSE(k_x3.empty());
  EXPECT_EQ(k_x3, k_f32) << "each weight MatMul over 3x its K";
  EXPECT_EQ(residuals, 0) << "the residuals are computed in the split steps";
  absl::StatusOr<graph::Graph> prepared = PrepareGraph(block3->model_bytes, {});
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  std::set<std::string> split_inputs;
  for (const graph::Node& node : prepared->nodes) {
    EXPECT_NE(node.op_type, "Concat") << node.name;
    if (node.op_type == graph::kBf16x3SplitOp) {
      EXPECT_EQ(node.domain, graph::kGtcoInternalDomain);
      split_inputs.insert(node.inputs.at(0));
    }
  }
  EXPECT_GE(split_inputs.size(), 2u) << "one split per activation a weight MatMul reads";
}

// bf16x3 leaves a MatMul of fewer than 16 rows (a classifier at batch 1) in f32, as ONNX's shape
// inference sizes it; bf16 too, beside others it rewrites, but rewrites it where it is the only
// one (a batch-1 MLP: nothing else to compute in bf16); both rewrite it where the rows are
// unknown.
TEST(MixedPrecisionTest, MatMulsOfFewRowsStayF32BesideOthers) {
  for (int64_t rows : {1, 15, 16, 0}) {
    SCOPED_TRACE(rows == 0 ? std::string("symbolic rows") : absl::StrCat(rows, " rows"));
    const std::string bytes = Bytes(
        SmallModel({Node("Relu", {"X"}, "R"), Node("Gemm", {"R", "W"}, "Y", /*trans_b=*/true)},
                   {"W"}, 17, false, rows));
    absl::StatusOr<Bf16Rewrite> split = RewriteMatMulsToBf16(bytes, Bf16Precision::kBf16x3);
    const bool few = rows > 0 && rows < 16;
    if (few) {
      EXPECT_EQ(split.status().code(), absl::StatusCode::kFailedPrecondition) << split.status();
    } else {
      ASSERT_TRUE(split.ok()) << split.status();
      EXPECT_EQ(split->matmuls, 1);
      EXPECT_EQ(split->kept_f32, 0);
    }
    absl::StatusOr<Bf16Rewrite> half = RewriteMatMulsToBf16(bytes, Bf16Precision::kBf16);
    ASSERT_TRUE(half.ok()) << half.status();
    EXPECT_EQ(half->matmuls, 1);
  }
  // Beside a MatMul of 16 rows, the one-row Gemm is kept and counted.
  ::onnx::ModelProto model =
      SmallModel({Node("MatMul", {"X", "W"}, "P"), Node("ReduceSum", {"P", "axes"}, "S"),
                  Node("Gemm", {"S", "W"}, "Y", /*trans_b=*/true)},
                 {"W"}, 17, false, /*rows=*/16);
  ::onnx::TensorProto* axes = model.mutable_graph()->add_initializer();
  axes->set_name("axes");
  axes->set_data_type(::onnx::TensorProto::INT64);
  axes->add_dims(1);
  axes->add_int64_data(0);  // S = the column sums [1, 8]
  model.mutable_graph()
      ->mutable_output(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_value(1);
  for (Bf16Precision precision : {Bf16Precision::kBf16x3, Bf16Precision::kBf16}) {
    absl::StatusOr<Bf16Rewrite> mixed = RewriteMatMulsToBf16(Bytes(model), precision);
    ASSERT_TRUE(mixed.ok()) << mixed.status();
    EXPECT_EQ(mixed->matmuls, 1) << Bf16PrecisionName(precision);
    EXPECT_EQ(mixed->kept_f32, 1) << Bf16PrecisionName(precision);
  }
}

// The split's five nodes become one step only when nothing else reads their intermediates (here
// a second reader of the high part keeps them: the literal nodes run); a model may not carry the
// internal domain the fused node lives in.
TEST(MixedPrecisionTest, Bf16x3SplitFusesOnlyWhereTheIntermediatesAreItsOwn) {
  absl::StatusOr<Bf16Rewrite> rewritten = RewriteMatMulsToBf16(
      Bytes(SmallModel({Node("MatMul", {"X", "W"}, "Y")}, {"W"}, 17, false, /*rows=*/16)),
      Bf16Precision::kBf16x3);
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  ::onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(rewritten->model_bytes));
  auto count = [](const graph::Graph& g, const std::string& op) {
    return std::count_if(g.nodes.begin(), g.nodes.end(),
                         [&](const graph::Node& node) { return node.op_type == op; });
  };
  absl::StatusOr<graph::Graph> fused = PrepareGraph(rewritten->model_bytes, {});
  ASSERT_TRUE(fused.ok()) << fused.status();
  EXPECT_EQ(count(*fused, graph::kBf16x3SplitOp), 1);
  EXPECT_EQ(count(*fused, "Cast"), 0) << "the MatMul's Cast back folded, the split's fused";
  // A second reader of the high part (an extra graph output through a Cast).
  const std::string high = model.graph().node(0).output(0);
  ::onnx::NodeProto extra = Node("Cast", {high}, "H32");
  auto* to = extra.add_attribute();
  to->set_name("to");
  to->set_type(::onnx::AttributeProto::INT);
  to->set_i(::onnx::TensorProto::FLOAT);
  *model.mutable_graph()->add_node() = extra;
  ::onnx::ValueInfoProto* h32 = model.mutable_graph()->add_output();
  *h32 = model.graph().output(0);
  h32->set_name("H32");
  absl::StatusOr<graph::Graph> kept = PrepareGraph(Bytes(model), {});
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(count(*kept, graph::kBf16x3SplitOp), 0);
  EXPECT_EQ(count(*kept, "Concat"), 1);
  EXPECT_EQ(count(*kept, "Sub"), 1);
  // The fused node's domain in a model file is refused.
  ::onnx::ModelProto internal = SmallModel({Node("Relu", {"X"}, "Y")}, {});
  internal.mutable_graph()->mutable_node(0)->set_domain(graph::kGtcoInternalDomain);
  internal.add_opset_import()->set_domain(graph::kGtcoInternalDomain);
  internal.mutable_opset_import(1)->set_version(1);
  absl::StatusOr<graph::Graph> refused = ImportOnnx(Bytes(internal), {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("only GTCO's own graph passes use"), std::string::npos)
      << refused.status();
}

/// x [1, 32, 6, 5] -> Conv 3x3 pads 1 (+ bias) -> Conv 1x1 -> Conv 3x3 stride 2 -> y.
::onnx::ModelProto ConvModel() {
  ::onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  ::onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("convs");
  auto value_info = [](::onnx::ValueInfoProto* info, const std::string& name,
                       std::vector<int64_t> dims) {
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(::onnx::TensorProto::FLOAT);
    for (int64_t dim : dims) tensor->mutable_shape()->add_dim()->set_dim_value(dim);
  };
  value_info(graph->add_input(), "x", {1, 32, 6, 5});
  value_info(graph->add_output(), "y", {1, 16, 3, 3});
  auto weight = [&](const std::string& name, std::vector<int64_t> dims) {
    ::onnx::TensorProto* w = graph->add_initializer();
    w->set_name(name);
    w->set_data_type(::onnx::TensorProto::FLOAT);
    int64_t count = 1;
    for (int64_t dim : dims) {
      w->add_dims(dim);
      count *= dim;
    }
    for (int64_t i = 0; i < count; ++i) w->add_float_data(0.1f * std::sin(0.3f * i) + 1.0f / 3);
  };
  auto conv = [&](const std::string& name, std::vector<std::string> inputs,
                  const std::string& output, int64_t kernel, int64_t stride, int64_t pad) {
    ::onnx::NodeProto* node = graph->add_node();
    node->set_op_type("Conv");
    node->set_name(name);
    for (const std::string& input : inputs) node->add_input(input);
    node->add_output(output);
    for (const auto& [attr, values] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
             {"kernel_shape", {kernel, kernel}},
             {"strides", {stride, stride}},
             {"pads", {pad, pad, pad, pad}}}) {
      ::onnx::AttributeProto* attribute = node->add_attribute();
      attribute->set_name(attr);
      attribute->set_type(::onnx::AttributeProto::INTS);
      for (int64_t v : values) attribute->add_ints(v);
    }
  };
  weight("w1", {32, 32, 3, 3});
  weight("b1", {32});
  weight("w2", {16, 32, 1, 1});
  weight("w3", {16, 16, 3, 3});
  conv("c1", {"x", "w1", "b1"}, "h1", 3, 1, 1);
  conv("c2", {"h1", "w2"}, "h2", 1, 1, 0);
  conv("c3", {"h2", "w3"}, "y", 3, 2, 1);
  return model;
}

// bf16x3 rewrites each unit-stride conv the AMX conv takes: the weight stored [W_hi, W_hi, W_lo]
// along C in bf16, the input split along its channels, a bias added after the Cast back; the
// strided conv (and one of 16 input channels) stays f32. After the graph passes each split writes
// the pair layout its conv reads, and a bf16 Conv that no split feeds that way is refused.
TEST(MixedPrecisionTest, Bf16x3ConvsReadTheirInputsSplitInThePairLayout) {
  absl::StatusOr<Bf16Rewrite> rewritten =
      RewriteMatMulsToBf16(Bytes(ConvModel()), Bf16Precision::kBf16x3);
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  EXPECT_EQ(rewritten->convs, 2);
  EXPECT_EQ(rewritten->matmuls, 0);
  EXPECT_EQ(rewritten->weights, 2);
  // The f32 weights and bias as one bf16 input would need them: bf16 rounding and its residual.
  ::onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(rewritten->model_bytes));
  const ::onnx::TensorProto* w1 = nullptr;
  for (const auto& tensor : model.graph().initializer()) {
    if (tensor.name() == "w1_bf16x3") w1 = &tensor;
  }
  ASSERT_NE(w1, nullptr);
  ASSERT_EQ(std::vector<int64_t>(w1->dims().begin(), w1->dims().end()),
            (std::vector<int64_t>{32, 96, 3, 3}));
  auto bf16_at = [&](int64_t k, int64_t c, int64_t tap) {
    uint16_t half;
    std::memcpy(&half, w1->raw_data().data() + 2 * ((k * 96 + c) * 9 + tap), 2);
    const uint32_t bits = static_cast<uint32_t>(half) << 16;
    float value;
    std::memcpy(&value, &bits, 4);
    return value;
  };
  const int64_t k = 3, c = 5, tap = 4;
  const float original = 0.1f * std::sin(0.3f * ((k * 32 + c) * 9 + tap)) + 1.0f / 3;
  EXPECT_EQ(bf16_at(k, c, tap), bf16_at(k, 32 + c, tap)) << "hi twice";
  EXPECT_NE(bf16_at(k, 64 + c, tap), 0.0f) << "1/3's residual";
  EXPECT_NEAR(bf16_at(k, c, tap) + bf16_at(k, 64 + c, tap), original, std::fabs(original) / 60000);
  absl::StatusOr<graph::Graph> g = PrepareGraph(rewritten->model_bytes, {});
  ASSERT_TRUE(g.ok()) << g.status();
  int splits = 0, pair_convs = 0;
  for (const graph::Node& node : g->nodes) {
    if (node.op_type == graph::kBf16x3SplitOp) {
      ++splits;
      EXPECT_TRUE(node.HasAttr(graph::kPairPadsAttr));
      const graph::Tensor& out = g->tensor(node.outputs[0]);
      EXPECT_EQ(out.shape.size(), 4u);
      EXPECT_EQ(out.shape[3], 2) << "channel pairs";
      EXPECT_GE(out.shape[1], 48) << "3 x 32 channels in pairs";
      EXPECT_LE(out.shape[1], 48 + 3) << "then the zero planes of the 80-pixel tail";
      EXPECT_GE((out.shape[1] - 48) * out.shape[2], 80);
    }
    if (node.op_type == "Conv" && node.HasAttr(graph::kPairImageAttr)) ++pair_convs;
  }
  EXPECT_EQ(splits, 2);
  EXPECT_EQ(pair_convs, 2);
  absl::StatusOr<ModelAnalysis> analysis = AnalyzeOnnxModel(rewritten->model_bytes, {});
  ASSERT_TRUE(analysis.ok()) << analysis.status();
  int pair_tasks = 0;
  for (const ModelTask& task : analysis->tasks) {
    if (task.workload.anchor != ir::AnchorKind::kConv || !task.workload.conv.x_pairs) continue;
    ++pair_tasks;
    EXPECT_EQ(task.workload.conv.in_channels, 96);
    EXPECT_EQ(task.workload.inputs[0].dtype, ir::DType::kBF16);
    EXPECT_EQ(task.workload.output.dtype, ir::DType::kF32);
  }
  EXPECT_EQ(pair_tasks, 2);
  // A rewritten conv dilated afterwards (a 1x1: same shapes): its split cannot be the pair
  // layout, and the bf16 conv runs as a fallback step, saying what a bf16 conv kernel needs.
  for (::onnx::NodeProto& node : *model.mutable_graph()->mutable_node()) {
    if (node.name() != "c2") continue;
    ::onnx::AttributeProto* dilations = node.add_attribute();
    dilations->set_name("dilations");
    dilations->set_type(::onnx::AttributeProto::INTS);
    dilations->add_ints(2);
    dilations->add_ints(2);
  }
  absl::StatusOr<graph::Graph> dilated = PrepareGraph(Bytes(model), {});
  ASSERT_TRUE(dilated.ok()) << dilated.status();
  const std::vector<graph::FallbackNode> fallbacks = graph::FallbackNodes(*dilated);
  ASSERT_EQ(fallbacks.size(), 1u);
  EXPECT_EQ(fallbacks[0].node, "c2");
  EXPECT_NE(fallbacks[0].reason.find("a bf16 Conv runs only as --precision bf16 or bf16x3"),
            std::string::npos)
      << fallbacks[0].reason;
  // The passes' own attributes in a model file are refused (the ONNX checker knows Conv's).
  ::onnx::ModelProto spoofed = ConvModel();
  ::onnx::AttributeProto* attribute = spoofed.mutable_graph()->mutable_node(0)->add_attribute();
  attribute->set_name(graph::kPairImageAttr);
  attribute->set_type(::onnx::AttributeProto::INTS);
  attribute->add_ints(1);
  absl::StatusOr<graph::Graph> imported = ImportOnnx(Bytes(spoofed), {});
  ASSERT_FALSE(imported.ok());
  EXPECT_NE(imported.status().message().find("gtco_pair_image"), std::string::npos)
      << imported.status();
}

// bf16 rewrites each conv of an even C of 16+ channels (here all three, the strided one too): the
// weight stored [K, C, R, S] in bf16 (each value rounded), the input cast once per (tensor, pads,
// strides), a bias added after the Cast back. After the graph passes each cast writes the pair
// layout of C channels its conv reads (the strided conv's as its stride phases).
TEST(MixedPrecisionTest, Bf16ConvsReadTheirInputsCastInThePairLayout) {
  absl::StatusOr<Bf16Rewrite> rewritten = RewriteMatMulsToBf16(Bytes(ConvModel()));
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  EXPECT_EQ(rewritten->convs, 3);
  EXPECT_EQ(rewritten->matmuls, 0);
  EXPECT_EQ(rewritten->weights, 3);
  ::onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(rewritten->model_bytes));
  const ::onnx::TensorProto* w1 = nullptr;
  for (const auto& tensor : model.graph().initializer()) {
    if (tensor.name() == "w1_bf16") w1 = &tensor;
    EXPECT_NE(tensor.name(), "w1") << "the f32 weight is dropped";
  }
  ASSERT_NE(w1, nullptr);
  ASSERT_EQ(std::vector<int64_t>(w1->dims().begin(), w1->dims().end()),
            (std::vector<int64_t>{32, 32, 3, 3}));
  uint16_t half;
  const int64_t k = 3, c = 5, tap = 4, at = (k * 32 + c) * 9 + tap;
  std::memcpy(&half, w1->raw_data().data() + 2 * at, 2);
  const uint32_t bits = static_cast<uint32_t>(half) << 16;
  float value;
  std::memcpy(&value, &bits, 4);
  const float original = 0.1f * std::sin(0.3f * at) + 1.0f / 3;
  EXPECT_NEAR(value, original, std::fabs(original) / 256) << "rounded to bf16's 8 bits";
  absl::StatusOr<graph::Graph> g = PrepareGraph(rewritten->model_bytes, {});
  ASSERT_TRUE(g.ok()) << g.status();
  int casts = 0, phased = 0, pair_convs = 0;
  for (const graph::Node& node : g->nodes) {
    if (node.op_type == graph::kBf16PairsOp) {
      ++casts;
      EXPECT_TRUE(node.HasAttr(graph::kPairPadsAttr));
      phased += node.HasAttr(graph::kPairStridesAttr);
      EXPECT_EQ(g->tensor(node.outputs[0]).shape[3], 2) << "channel pairs";
    }
    EXPECT_NE(node.op_type, "Cast") << node.name << ": every cast is fused";
    if (node.op_type == "Conv" && node.HasAttr(graph::kPairImageAttr)) ++pair_convs;
  }
  EXPECT_EQ(casts, 3);
  EXPECT_EQ(phased, 1) << "c3's stride 2";
  EXPECT_EQ(pair_convs, 3);
  absl::StatusOr<ModelAnalysis> analysis = AnalyzeOnnxModel(rewritten->model_bytes, {});
  ASSERT_TRUE(analysis.ok()) << analysis.status();
  std::vector<int64_t> channels;
  for (const ModelTask& task : analysis->tasks) {
    if (task.workload.anchor != ir::AnchorKind::kConv || !task.workload.conv.x_pairs) continue;
    channels.push_back(task.workload.conv.in_channels);
    EXPECT_EQ(task.workload.inputs[0].dtype, ir::DType::kBF16);
  }
  std::sort(channels.begin(), channels.end());
  EXPECT_EQ(channels, (std::vector<int64_t>{16, 32, 32}));
}

// bf16 on a conv of 3 input channels (a stem): its input gets a zero channel (a Concat with a zero
// initializer [N, 1, H, W]) and its weight a zero channel ([K, 4, R, S]); without X's static
// shape the conv stays f32.
TEST(MixedPrecisionTest, Bf16ConvsOfOddChannelsGetAZeroChannel) {
  ::onnx::ModelProto model = ConvModel();
  ::onnx::GraphProto* graph = model.mutable_graph();
  graph->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->set_dim_value(3);
  for (::onnx::TensorProto& w : *graph->mutable_initializer()) {
    if (w.name() != "w1") continue;
    w.set_dims(1, 3);
    w.clear_float_data();
    for (int64_t i = 0; i < 32 * 3 * 9; ++i) w.add_float_data(0.5f + 0.01f * i);
  }
  absl::StatusOr<Bf16Rewrite> rewritten = RewriteMatMulsToBf16(Bytes(model));
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  EXPECT_EQ(rewritten->convs, 3);
  ::onnx::ModelProto out;
  ASSERT_TRUE(out.ParseFromString(rewritten->model_bytes));
  int concats = 0;
  for (const auto& node : out.graph().node()) concats += node.op_type() == "Concat";
  EXPECT_EQ(concats, 1);
  const ::onnx::TensorProto* w1 = nullptr;
  const ::onnx::TensorProto* zeros = nullptr;
  for (const auto& tensor : out.graph().initializer()) {
    if (tensor.name() == "w1_bf16") w1 = &tensor;
    if (tensor.name() == "x_zero_channel") zeros = &tensor;
  }
  ASSERT_NE(w1, nullptr);
  ASSERT_NE(zeros, nullptr);
  EXPECT_EQ(std::vector<int64_t>(w1->dims().begin(), w1->dims().end()),
            (std::vector<int64_t>{32, 4, 3, 3}));
  EXPECT_EQ(std::vector<int64_t>(zeros->dims().begin(), zeros->dims().end()),
            (std::vector<int64_t>{1, 1, 6, 5}));
  auto half_at = [&](int64_t k, int64_t c, int64_t tap) {
    uint16_t half;
    std::memcpy(&half, w1->raw_data().data() + 2 * ((k * 4 + c) * 9 + tap), 2);
    return half;
  };
  EXPECT_EQ(half_at(5, 3, 4), 0) << "the zero channel";
  EXPECT_NE(half_at(5, 2, 4), 0);
  absl::StatusOr<graph::Graph> g = PrepareGraph(rewritten->model_bytes, {});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(graph::FallbackNodes(*g).empty());
  // A symbolic batch: no zero channel can be made, the conv stays f32.
  graph->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_param("n");
  absl::StatusOr<Bf16Rewrite> symbolic = RewriteMatMulsToBf16(Bytes(model));
  ASSERT_TRUE(symbolic.ok()) << symbolic.status();
  EXPECT_EQ(symbolic->convs, 2);
}

// Nothing to rewrite, or not a model: errors that say so.
TEST(MixedPrecisionTest, NothingToRewriteAndNotAModelAreErrors) {
  absl::StatusOr<Bf16Rewrite> again = RewriteMatMulsToBf16(ReadModel("matmul_bf16.onnx"));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(again.status().message().find("nothing to rewrite"), std::string::npos);
  EXPECT_EQ(RewriteMatMulsToBf16("not a model").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gtco::onnx
