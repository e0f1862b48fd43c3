// Tests of importing low-precision ONNX models: bf16 MatMul and MatMulInteger with zero points
// keep their element types and constant values (models from tests/data/make_lowp_models.py); and
// of the bf16 rewrite of an f32 model's weight MatMuls (gtco-client --precision bf16).
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/onnx/mixed_precision.h"
#include "common/onnx/model_analysis.h"
#include "common/onnx/onnx_import.h"
#include "gtest/gtest.h"

namespace gtco::onnx {
namespace {

std::string ReadModel(const std::string& name) {
  std::ifstream in(std::string(GTCO_SOURCE_DIR) + "/tests/data/" + name, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

/// True when `value` is exactly a bf16 number (its low 16 fp32 bits are zero).
bool IsBf16Value(double value) {
  const float narrow = static_cast<float>(value);
  uint32_t bits;
  std::memcpy(&bits, &narrow, sizeof(bits));
  return narrow == value && (bits & 0xFFFF) == 0;
}

TEST(OnnxLowpImportTest, Bf16MatMulKeepsBf16TensorsAndValues) {
  const std::string bytes = ReadModel("matmul_bf16.onnx");
  ASSERT_FALSE(bytes.empty());
  absl::StatusOr<graph::Graph> graph = ImportOnnx(bytes, {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 2u);
  const graph::Node& matmul = graph->nodes[0];
  EXPECT_EQ(matmul.op_type, "MatMul");
  EXPECT_EQ(graph->tensor("X").type, graph::ElemType::kBFloat16);
  EXPECT_EQ(graph->tensor("Y").type, graph::ElemType::kBFloat16);
  EXPECT_EQ(graph->tensor("Y").shape, (std::vector<int64_t>{4, 32}));
  EXPECT_EQ(graph->tensor("Y_f32").type, graph::ElemType::kFloat32);
  const graph::Tensor& weight = graph->tensor("W");
  ASSERT_TRUE(weight.is_constant);
  EXPECT_EQ(weight.type, graph::ElemType::kBFloat16);
  ASSERT_EQ(weight.float_data.size(), 64u * 32u);
  double magnitude = 0;
  for (double value : weight.float_data) {
    EXPECT_TRUE(IsBf16Value(value)) << value;
    EXPECT_LE(std::fabs(value), 1.0);
    magnitude += value * value;
  }
  EXPECT_GT(magnitude, 100.0);  // uniform [-1, 1] weights, not zeros
}

TEST(OnnxLowpImportTest, MatMulIntegerKeepsIntegerTypesAndZeroPoints) {
  absl::StatusOr<graph::Graph> graph = ImportOnnx(ReadModel("matmul_integer.onnx"), {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  const graph::Node& matmul = graph->nodes.at(0);
  EXPECT_EQ(matmul.op_type, "MatMulInteger");
  ASSERT_EQ(matmul.inputs.size(), 4u);
  EXPECT_EQ(graph->tensor("A").type, graph::ElemType::kUInt8);
  EXPECT_EQ(graph->tensor("Y").type, graph::ElemType::kInt32);
  EXPECT_EQ(graph->tensor("Y").shape, (std::vector<int64_t>{1, 3, 33}));
  const graph::Tensor& b = graph->tensor("B");
  EXPECT_EQ(b.type, graph::ElemType::kInt8);
  ASSERT_EQ(b.int_data.size(), 70u * 33u);
  int64_t low = 0, high = 0;
  for (int64_t value : b.int_data) {
    low = std::min(low, value);
    high = std::max(high, value);
  }
  EXPECT_LT(low, -100);  // the full int8 range, sign included
  EXPECT_GT(high, 100);
  EXPECT_EQ(graph->tensor("a_zero_point").type, graph::ElemType::kUInt8);
  EXPECT_EQ(graph->tensor("a_zero_point").ValueAsInt(0), 7);
  EXPECT_EQ(graph->tensor("b_zero_point").ValueAsInt(0), -3);
  EXPECT_TRUE(graph->tensor("b_zero_point").shape.empty());  // a scalar
}

// --precision bf16 on the transformer block: each MatMul with a constant weight becomes a bf16 x
// bf16 workload writing f32 with its bias / GELU / residual epilogue intact; attention's
// MatMuls (two computed operands) stay f32; the weights are bf16-rounded copies of the f32 ones.
TEST(OnnxLowpImportTest, Bf16RewriteRunsWeightMatMulsOnBf16WithTheirEpilogues) {
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

  // Nothing to rewrite, or not a model: errors that say so.
  // A Gemm with transB (the ResNet-like mlp's classifier) becomes MatMul of the weight stored
  // [K, N] in bf16, a Cast and an Add of the bias: one bf16 workload with the bias in its
  // epilogue.
  const std::string mlp = ReadModel("mlp.onnx");
  absl::StatusOr<Bf16Rewrite> gemms = RewriteMatMulsToBf16(mlp);
  ASSERT_TRUE(gemms.ok()) << gemms.status();
  absl::StatusOr<ModelAnalysis> mlp_f32 = AnalyzeOnnxModel(mlp, {});
  absl::StatusOr<ModelAnalysis> mlp_bf16 = AnalyzeOnnxModel(gemms->model_bytes, {});
  ASSERT_TRUE(mlp_f32.ok() && mlp_bf16.ok()) << mlp_bf16.status();
  ASSERT_EQ(mlp_bf16->tasks.size(), mlp_f32->tasks.size());
  for (size_t i = 0; i < mlp_bf16->tasks.size(); ++i) {
    const ir::Workload& w = mlp_bf16->tasks[i].workload;
    const ir::Workload& was = mlp_f32->tasks[i].workload;
    if (w.anchor != ir::AnchorKind::kMatMul) continue;
    SCOPED_TRACE(w.Description());
    EXPECT_EQ(w.inputs[0].dtype, ir::DType::kBF16);
    EXPECT_EQ(w.matmul.n, was.matmul.n);
    EXPECT_EQ(w.matmul.k, was.matmul.k);
    EXPECT_FALSE(w.matmul.trans_b) << "the transposed weight is stored [K, N]";
    EXPECT_EQ(w.epilogue.size(), was.epilogue.size());
  }

  absl::StatusOr<Bf16Rewrite> again = RewriteMatMulsToBf16(ReadModel("matmul_bf16.onnx"));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(again.status().message().find("nothing to rewrite"), std::string::npos);
  EXPECT_EQ(RewriteMatMulsToBf16("not a model").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gtco::onnx
