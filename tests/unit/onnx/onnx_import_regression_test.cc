// Regression tests for importer crashes found by fuzzing (tests/fuzz/fuzz_onnx_import): models
// built here with the ONNX protobuf API, each of which once crashed the server.
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "common/graph/constant_folding.h"
#include "common/onnx/onnx_import.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"

namespace gtco::onnx {
namespace {

void AddTensorValue(::onnx::ValueInfoProto* value, const std::string& name, int elem_type,
                    const std::vector<int64_t>& dims) {
  value->set_name(name);
  auto* tensor_type = value->mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(elem_type);
  auto* shape = tensor_type->mutable_shape();
  for (int64_t dim : dims) shape->add_dim()->set_dim_value(dim);
}

/// A model of ONNX opset 17 (IR version 8) with an empty graph named `name`.
::onnx::ModelProto EmptyModel(const std::string& name) {
  ::onnx::ModelProto model;
  model.set_ir_version(8);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  model.mutable_graph()->set_name(name);
  return model;
}

/// x [1,3,16,16] -> `producer` -> c -> Shape -> s (int64), with ONNX opset 17.
::onnx::ModelProto ShapeOfProducer(const std::function<void(::onnx::NodeProto*)>& producer) {
  ::onnx::ModelProto model = EmptyModel("shape_of_producer");
  auto* graph = model.mutable_graph();
  AddTensorValue(graph->add_input(), "x", ::onnx::TensorProto::FLOAT, {1, 3, 16, 16});
  ::onnx::NodeProto* node = graph->add_node();
  node->set_name("producer");
  node->add_input("x");
  node->add_output("c");
  producer(node);
  ::onnx::NodeProto* shape = graph->add_node();
  shape->set_name("shape");
  shape->set_op_type("Shape");
  shape->add_input("c");
  shape->add_output("s");
  AddTensorValue(graph->add_output(), "s", ::onnx::TensorProto::INT64, {4});
  return model;
}

// ONNX 1.12's data propagation dereferenced the missing type of Shape's input (the output of
// an op without a schema here): a segfault during import.
TEST(OnnxImportRegressionTest, ShapeOfACustomOpOutputDoesNotCrash) {
  ::onnx::ModelProto model = ShapeOfProducer([](::onnx::NodeProto* node) {
    node->set_op_type("Foo");
    node->set_domain("com.example");
  });
  auto* custom_opset = model.add_opset_import();
  custom_opset->set_domain("com.example");
  custom_opset->set_version(1);
  absl::StatusOr<graph::Graph> graph = ImportOnnx(model.SerializeAsString(), {});
  ASSERT_TRUE(graph.ok()) << graph.status();  // the support check reports 'Foo' later
  EXPECT_EQ(graph->nodes.size(), 2u);
}

// The same crash behind a node whose shape inference failed (Conv with 3 pads for 2 spatial
// dims): now the inference error is reported.
TEST(OnnxImportRegressionTest, ShapeOfAFailedNodeReportsTheInferenceError) {
  ::onnx::ModelProto model = ShapeOfProducer([](::onnx::NodeProto* node) {
    node->set_op_type("Conv");
    node->add_input("w");
    auto* pads = node->add_attribute();
    pads->set_name("pads");
    pads->set_type(::onnx::AttributeProto::INTS);
    for (int pad = 0; pad < 3; ++pad) pads->add_ints(0);
  });
  ::onnx::TensorProto* weight = model.mutable_graph()->add_initializer();
  weight->set_name("w");
  weight->set_data_type(::onnx::TensorProto::FLOAT);
  for (int64_t dim : {4, 3, 3, 3}) weight->add_dims(dim);
  for (int index = 0; index < 4 * 3 * 3 * 3; ++index) weight->add_float_data(0.5f);
  absl::StatusOr<graph::Graph> graph = ImportOnnx(model.SerializeAsString(), {});
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(graph.status().message()).find("pads"), std::string::npos)
      << graph.status();
}

// Data propagation still runs where it is safe: Reshape(c, Shape(c)) gets a static shape.
TEST(OnnxImportRegressionTest, ShapeArithmeticStillFoldsIntoStaticShapes) {
  ::onnx::ModelProto model = ShapeOfProducer([](::onnx::NodeProto* node) {
    node->set_op_type("Relu");
  });
  ::onnx::GraphProto* graph_proto = model.mutable_graph();
  ::onnx::NodeProto* reshape = graph_proto->add_node();
  reshape->set_name("reshape");
  reshape->set_op_type("Reshape");
  reshape->add_input("c");
  reshape->add_input("s");
  reshape->add_output("r");
  ::onnx::NodeProto* relu = graph_proto->add_node();
  relu->set_name("relu");
  relu->set_op_type("Relu");
  relu->add_input("r");
  relu->add_output("y");
  AddTensorValue(graph_proto->add_output(), "y", ::onnx::TensorProto::FLOAT, {1, 3, 16, 16});
  absl::StatusOr<graph::Graph> graph = ImportOnnx(model.SerializeAsString(), {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_TRUE(graph->tensor("r").has_shape);
  EXPECT_EQ(graph->tensor("r").shape, (std::vector<int64_t>{1, 3, 16, 16}));
}

// An int8 zero point stored in int32_data as -33554435 reached the fusion planner, which built
// an invalid workload (INTERNAL error). 8-bit and bool values now keep only their type's bits.
TEST(OnnxImportRegressionTest, NarrowIntegerValuesAreReducedToTheirType) {
  ::onnx::ModelProto model = EmptyModel("narrow_values");
  auto* graph = model.mutable_graph();
  const struct {
    const char* name;
    int data_type;
    int32_t stored;
    int64_t expected;
  } kCases[] = {{"i8", ::onnx::TensorProto::INT8, -33554435, -3},
                {"u8", ::onnx::TensorProto::UINT8, 300, 44},
                {"flag", ::onnx::TensorProto::BOOL, 2, 1}};
  for (const auto& value : kCases) {
    ::onnx::TensorProto* initializer = graph->add_initializer();
    initializer->set_name(value.name);
    initializer->set_data_type(value.data_type);
    initializer->add_dims(1);
    initializer->add_int32_data(value.stored);
    ::onnx::NodeProto* cast = graph->add_node();
    cast->set_name(std::string("cast_") + value.name);
    cast->set_op_type("Cast");
    cast->add_input(value.name);
    cast->add_output(std::string(value.name) + "_f");
    auto* to = cast->add_attribute();
    to->set_name("to");
    to->set_type(::onnx::AttributeProto::INT);
    to->set_i(::onnx::TensorProto::FLOAT);
    AddTensorValue(graph->add_output(), std::string(value.name) + "_f",
                   ::onnx::TensorProto::FLOAT, {1});
  }
  absl::StatusOr<graph::Graph> imported = ImportOnnx(model.SerializeAsString(), {});
  ASSERT_TRUE(imported.ok()) << imported.status();
  for (const auto& value : kCases) {
    EXPECT_EQ(imported->tensor(value.name).int_data, (std::vector<int64_t>{value.expected}))
        << value.name;
  }
}

// Initializer dims whose product overflowed int64 (undefined behaviour), and a shape override
// so large that the fusion planner built an invalid workload (INTERNAL error): tensors are now
// limited to 2^40 elements at import, with INVALID_ARGUMENT naming the tensor.
TEST(OnnxImportRegressionTest, HugeTensorsAreRejectedAtImport) {
  ::onnx::ModelProto model = ShapeOfProducer([](::onnx::NodeProto* node) {
    node->set_op_type("Relu");
  });
  ::onnx::TensorProto* huge = model.mutable_graph()->add_initializer();
  huge->set_name("huge");
  huge->set_data_type(::onnx::TensorProto::FLOAT);
  for (int64_t dim : {int64_t{1} << 32, int64_t{1} << 32}) huge->add_dims(dim);
  absl::StatusOr<graph::Graph> graph = ImportOnnx(model.SerializeAsString(), {});
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(graph.status().message()).find("'huge'"), std::string::npos)
      << graph.status();

  std::ifstream in(std::string(GTCO_SOURCE_DIR) + "/tests/data/dynamic_mlp.onnx",
                   std::ios::binary);
  const std::string dynamic_mlp((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  ASSERT_FALSE(dynamic_mlp.empty());
  graph = ImportOnnx(dynamic_mlp, {{"input", {int64_t{1} << 41, 32}}});
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ImportOnnx(dynamic_mlp, {{"input", {4, 32}}}).ok());
}


// Constant folding multiplied two int64 initializers (102254581383169 × 216172782113783809)
// with C++ signed overflow (undefined behaviour, found by fuzz_onnx_import). Folded integer
// arithmetic now wraps in two's complement, and floats cast to int64 saturate (NaN → 0).
TEST(OnnxImportRegressionTest, FoldedIntegerOverflowWrapsAndFloatCastsSaturate) {
  ::onnx::ModelProto model = EmptyModel("folded_overflow");
  auto* graph = model.mutable_graph();
  auto add_int64 = [&](const char* name, int64_t value) {
    ::onnx::TensorProto* initializer = graph->add_initializer();
    initializer->set_name(name);
    initializer->set_data_type(::onnx::TensorProto::INT64);
    initializer->add_dims(1);
    initializer->add_int64_data(value);
  };
  add_int64("a", 102254581383169);
  add_int64("b", 216172782113783809);
  add_int64("lowest", std::numeric_limits<int64_t>::min());
  add_int64("minus_one", -1);
  ::onnx::TensorProto* floats = graph->add_initializer();
  floats->set_name("f");
  floats->set_data_type(::onnx::TensorProto::FLOAT);
  floats->add_dims(3);
  for (float value : {1e30f, std::numeric_limits<float>::quiet_NaN(), -1e30f}) {
    floats->add_float_data(value);
  }
  auto add_node = [&](const char* op, std::vector<const char*> inputs, const char* output) {
    ::onnx::NodeProto* node = graph->add_node();
    node->set_name(output);
    node->set_op_type(op);
    for (const char* input : inputs) node->add_input(input);
    node->add_output(output);
    return node;
  };
  add_node("Mul", {"a", "b"}, "product");
  add_node("Div", {"lowest", "minus_one"}, "quotient");
  auto* to = add_node("Cast", {"f"}, "cast")->add_attribute();
  to->set_name("to");
  to->set_type(::onnx::AttributeProto::INT);
  to->set_i(::onnx::TensorProto::INT64);
  AddTensorValue(graph->add_output(), "product", ::onnx::TensorProto::INT64, {1});
  AddTensorValue(graph->add_output(), "quotient", ::onnx::TensorProto::INT64, {1});
  AddTensorValue(graph->add_output(), "cast", ::onnx::TensorProto::INT64, {3});
  absl::StatusOr<graph::Graph> imported = ImportOnnx(model.SerializeAsString(), {});
  ASSERT_TRUE(imported.ok()) << imported.status();
  ASSERT_TRUE(graph::FoldConstants(*imported).ok());
  const int64_t wrapped = static_cast<int64_t>(uint64_t{102254581383169} * 216172782113783809u);
  EXPECT_EQ(imported->tensor("product").int_data, (std::vector<int64_t>{wrapped}));
  EXPECT_EQ(imported->tensor("quotient").int_data,
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min()}));
  EXPECT_EQ(imported->tensor("cast").int_data,
            (std::vector<int64_t>{std::numeric_limits<int64_t>::max(), 0,
                                  std::numeric_limits<int64_t>::min()}));
}

// An exporter newer than Debian's ONNX library (onnx 1.23 on a GPU machine's Python; torch 2.x
// with onnx 1.16+) writes IR version 10, which ONNX 1.12's checker refused outright: such a model
// was "not a valid ONNX model" at submit. It imports as the same graph checked as of IR 8.
TEST(OnnxImportRegressionTest, ModelsOfANewerIrVersionImport) {
  for (int ir_version : {9, 10}) {
    SCOPED_TRACE(ir_version);
    ::onnx::ModelProto model = EmptyModel("relu_of_a_newer_ir");
    model.set_ir_version(ir_version);
    auto* graph = model.mutable_graph();
    AddTensorValue(graph->add_input(), "x", ::onnx::TensorProto::FLOAT, {2, 8});
    ::onnx::NodeProto* relu = graph->add_node();
    relu->set_name("relu");
    relu->set_op_type("Relu");
    relu->add_input("x");
    relu->add_output("y");
    AddTensorValue(graph->add_output(), "y", ::onnx::TensorProto::FLOAT, {2, 8});
    absl::StatusOr<graph::Graph> imported = ImportOnnx(model.SerializeAsString(), {});
    ASSERT_TRUE(imported.ok()) << imported.status();
    ASSERT_EQ(imported->nodes.size(), 1u);
    EXPECT_EQ(imported->nodes[0].op_type, "Relu");
    EXPECT_EQ(imported->tensor("y").shape, (std::vector<int64_t>{2, 8}));
  }
}

}  // namespace
}  // namespace gtco::onnx
