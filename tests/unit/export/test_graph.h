// A builder of small f32 ONNX graphs (opset 17) for the export tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace gtco::testing {

/// An f32 ONNX graph (opset 17) built for a test: static-shape inputs and outputs, deterministic
/// weights (scaled sines, a new phase per weight), nodes, and convs with their window attributes.
class TestGraph {
 public:
  explicit TestGraph(const std::string& name) {
    model_.set_ir_version(8);
    auto* opset = model_.add_opset_import();
    opset->set_domain("");
    opset->set_version(17);
    graph_ = model_.mutable_graph();
    graph_->set_name(name);
  }

  void Input(const std::string& name, const std::vector<int64_t>& dims) {
    Value(graph_->add_input(), name, dims);
  }
  void Output(const std::string& name, const std::vector<int64_t>& dims) {
    Value(graph_->add_output(), name, dims);
  }
  void Weight(const std::string& name, const std::vector<int64_t>& dims) {
    ::onnx::TensorProto* tensor = graph_->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(::onnx::TensorProto::FLOAT);
    int64_t count = 1;
    for (int64_t dim : dims) {
      tensor->add_dims(dim);
      count *= dim;
    }
    const double scale = 1.0 / std::sqrt(static_cast<double>(count / dims[0]));
    ++seed_;
    for (int64_t i = 0; i < count; ++i) {
      tensor->add_float_data(static_cast<float>(scale * std::sin(0.7 * i + seed_)));
    }
  }
  ::onnx::NodeProto* Node(const std::string& op, const std::string& name,
                          const std::vector<std::string>& inputs, const std::string& output) {
    ::onnx::NodeProto* n = graph_->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const std::string& input : inputs) n->add_input(input);
    n->add_output(output);
    return n;
  }
  /// A constant f32 `name` of `dims` holding `values`.
  void WeightValues(const std::string& name, const std::vector<int64_t>& dims,
                    const std::vector<float>& values) {
    ::onnx::TensorProto* tensor = graph_->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(::onnx::TensorProto::FLOAT);
    for (int64_t dim : dims) tensor->add_dims(dim);
    for (float value : values) tensor->add_float_data(value);
  }
  /// A constant i64 `name` of `dims` holding `values`.
  void IntValues(const std::string& name, const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& values) {
    ::onnx::TensorProto* tensor = graph_->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(::onnx::TensorProto::INT64);
    for (int64_t dim : dims) tensor->add_dims(dim);
    for (int64_t value : values) tensor->add_int64_data(value);
  }
  /// A constant bool `name` of `dims` holding `values`.
  void BoolValues(const std::string& name, const std::vector<int64_t>& dims,
                  const std::vector<bool>& values) {
    ::onnx::TensorProto* tensor = graph_->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(::onnx::TensorProto::BOOL);
    for (int64_t dim : dims) tensor->add_dims(dim);
    for (bool value : values) tensor->add_int32_data(value ? 1 : 0);
  }
  static void Int(::onnx::NodeProto* node, const std::string& name, int64_t value) {
    ::onnx::AttributeProto* attribute = node->add_attribute();
    attribute->set_name(name);
    attribute->set_type(::onnx::AttributeProto::INT);
    attribute->set_i(value);
  }
  static void String(::onnx::NodeProto* node, const std::string& name, const std::string& value) {
    ::onnx::AttributeProto* attribute = node->add_attribute();
    attribute->set_name(name);
    attribute->set_type(::onnx::AttributeProto::STRING);
    attribute->set_s(value);
  }
  static void Ints(::onnx::NodeProto* node, const std::string& name,
                   const std::vector<int64_t>& values) {
    ::onnx::AttributeProto* attribute = node->add_attribute();
    attribute->set_name(name);
    attribute->set_type(::onnx::AttributeProto::INTS);
    for (int64_t v : values) attribute->add_ints(v);
  }
  /// Conv `name` of x into y with its weights name_w and bias name_b.
  void Conv(const std::string& name, const std::string& x, const std::string& y, int64_t in,
            int64_t out, int64_t kernel, int64_t stride, int64_t pad, int64_t group = 1) {
    Weight(name + "_w", {out, in / group, kernel, kernel});
    Weight(name + "_b", {out});
    ::onnx::NodeProto* n = Node("Conv", name, {x, name + "_w", name + "_b"}, y);
    Ints(n, "kernel_shape", {kernel, kernel});
    Ints(n, "strides", {stride, stride});
    Ints(n, "pads", {pad, pad, pad, pad});
    if (group > 1) {
      ::onnx::AttributeProto* attribute = n->add_attribute();
      attribute->set_name("group");
      attribute->set_type(::onnx::AttributeProto::INT);
      attribute->set_i(group);
    }
  }
  std::string Bytes() const { return model_.SerializeAsString(); }

 private:
  static void Value(::onnx::ValueInfoProto* info, const std::string& name,
                    const std::vector<int64_t>& dims) {
    info->set_name(name);
    auto* tensor_type = info->mutable_type()->mutable_tensor_type();
    tensor_type->set_elem_type(::onnx::TensorProto::FLOAT);
    for (int64_t dim : dims) tensor_type->mutable_shape()->add_dim()->set_dim_value(dim);
  }

  ::onnx::ModelProto model_;
  ::onnx::GraphProto* graph_ = nullptr;
  int seed_ = 0;
};

}  // namespace gtco::testing
