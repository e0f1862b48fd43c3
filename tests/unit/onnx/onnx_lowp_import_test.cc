// Tests of importing low-precision ONNX models: bf16 MatMul and MatMulInteger with zero points
// keep their element types and constant values (models from tests/data/make_lowp_models.py).
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/onnx/onnx_import.h"
#include "gtest/gtest.h"
#include "tests/unit/onnx/test_models.h"

namespace gtco::onnx {
namespace {

using testing::ReadModel;
using testing::IsBf16Value;

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

}  // namespace
}  // namespace gtco::onnx
