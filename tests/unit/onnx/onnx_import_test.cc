// Tests for the ONNX importer: graph contents, shape overrides and every import error.
#include "common/onnx/onnx_import.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "tests/unit/onnx/test_models.h"

namespace gtco::onnx {
namespace {

using testing::ReadModel;

bool Contains(const absl::Status& status, const std::string& text) {
  return std::string(status.message()).find(text) != std::string::npos;
}

TEST(OnnxImportTest, ImportsMlpWithWeightsShapesAndAttributes) {
  std::string bytes = ReadModel("mlp.onnx");
  ASSERT_FALSE(bytes.empty());
  auto graph = ImportOnnx(bytes, {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->opset, 17);
  ASSERT_EQ(graph->inputs, std::vector<std::string>{"input"});
  ASSERT_EQ(graph->outputs, std::vector<std::string>{"output"});
  EXPECT_EQ(graph->tensor("input").shape, (std::vector<int64_t>{4, 32}));
  EXPECT_EQ(graph->tensor("output").shape, (std::vector<int64_t>{4, 16}));
  ASSERT_EQ(graph->nodes.size(), 3u);
  const graph::Node& gemm = graph->nodes[0];
  EXPECT_EQ(gemm.op_type, "Gemm");
  EXPECT_EQ(gemm.IntAttr("transB", 0), 1);
  const graph::Tensor& weight = graph->tensor(gemm.inputs[1]);
  EXPECT_TRUE(weight.is_constant);
  EXPECT_EQ(weight.shape, (std::vector<int64_t>{64, 32}));
  ASSERT_EQ(weight.float_data.size(), 64u * 32u);
  // Weights come from a seeded nn.Linear init, not zeros.
  double magnitude = 0;
  for (double value : weight.float_data) magnitude += value * value;
  EXPECT_GT(magnitude, 0.1);
  // The hidden activation's shape comes from ONNX shape inference.
  EXPECT_TRUE(graph->tensor(gemm.outputs[0]).has_shape);
  EXPECT_EQ(graph->tensor(gemm.outputs[0]).shape, (std::vector<int64_t>{4, 64}));
}

TEST(OnnxImportTest, ConstantNodesKeepTheirTensorAttribute) {
  auto graph = ImportOnnx(ReadModel("transformer_block.onnx"), {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  bool found_scale = false;
  for (const graph::Node& node : graph->nodes) {
    if (node.op_type != "Constant" || node.name != "/attn/Constant_4") continue;
    const graph::Attribute& value = node.attributes.at("value");
    ASSERT_EQ(value.kind, graph::Attribute::Kind::kTensor);
    ASSERT_EQ(value.tensor.at(0).float_data.size(), 1u);
    EXPECT_FLOAT_EQ(value.tensor[0].float_data[0], std::sqrt(32.0f));  // sqrt(head_dim)
    found_scale = true;
  }
  EXPECT_TRUE(found_scale);
}

TEST(OnnxImportTest, RejectsBytesThatAreNotOnnx) {
  for (const std::string bytes : {std::string("this is not a model"), std::string(),
                                  std::string("\x08\x07\x12\x03\x61\x62", 6)}) {
    auto graph = ImportOnnx(bytes, {});
    ASSERT_FALSE(graph.ok());
    EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(graph.status(), "not a valid ONNX model")) << graph.status();
  }
}

TEST(OnnxImportTest, RejectsTruncatedModels) {
  const std::string bytes = ReadModel("transformer_block.onnx");
  for (size_t keep : {bytes.size() / 2, bytes.size() - 1, size_t{100}}) {
    auto graph = ImportOnnx(bytes.substr(0, keep), {});
    ASSERT_FALSE(graph.ok()) << "kept " << keep;
    EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(graph.status(), "not a valid ONNX model")) << graph.status();
  }
}

TEST(OnnxImportTest, SymbolicDimWithoutOverrideTellsHowToPassShape) {
  auto graph = ImportOnnx(ReadModel("dynamic_mlp.onnx"), {});
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(graph.status(), "input 'input'")) << graph.status();
  EXPECT_TRUE(Contains(graph.status(), "'batch'")) << graph.status();
  EXPECT_TRUE(Contains(graph.status(), "--shape input=1x32")) << graph.status();
}

TEST(OnnxImportTest, OverrideMakesDynamicInputStatic) {
  auto graph = ImportOnnx(ReadModel("dynamic_mlp.onnx"), {{"input", {8, 32}}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->tensor("input").shape, (std::vector<int64_t>{8, 32}));
  EXPECT_EQ(graph->tensor("output").shape, (std::vector<int64_t>{8, 16}));
}

TEST(OnnxImportTest, OverrideOfUnknownInputIsRejected) {
  auto graph = ImportOnnx(ReadModel("mlp.onnx"), {{"images", {4, 32}}});
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(graph.status(), "unknown input 'images'")) << graph.status();
  EXPECT_TRUE(Contains(graph.status(), "input")) << graph.status();
}

TEST(OnnxImportTest, OverrideOfInitializerOrWrongRankIsRejected) {
  auto weight = ImportOnnx(ReadModel("unsupported_op.onnx"), {{"weight", {8, 8}}});
  EXPECT_EQ(weight.status().code(), absl::StatusCode::kInvalidArgument);
  auto rank = ImportOnnx(ReadModel("mlp.onnx"), {{"input", {4, 32, 1}}});
  EXPECT_EQ(rank.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(rank.status(), "rank")) << rank.status();
}

TEST(OnnxImportTest, ExternalDataIsUnimplemented) {
  auto graph = ImportOnnx(ReadModel("external_data.onnx"), {});
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(Contains(graph.status(), "'weight'")) << graph.status();
  EXPECT_TRUE(Contains(graph.status(), "external data")) << graph.status();
}

TEST(OnnxImportTest, ParsesShapeOverrideFlags) {
  auto parsed = ParseShapeOverride("input=1x128x768");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->first, "input");
  EXPECT_EQ(parsed->second, (std::vector<int64_t>{1, 128, 768}));
  for (const char* bad : {"input", "=1x2", "input=", "input=1xax3", "input=0x3", "input=1x-2"}) {
    EXPECT_EQ(ParseShapeOverride(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace gtco::onnx
