// Helpers that build small graph IR graphs by hand for the graph-pass tests.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "common/graph/graph.h"

namespace gtco::graph::testing {

inline Tensor Activation(const std::string& name, std::vector<int64_t> shape,
                         ElemType type = ElemType::kFloat32) {
  Tensor tensor;
  tensor.name = name;
  tensor.type = type;
  tensor.shape = std::move(shape);
  tensor.has_shape = true;
  return tensor;
}

/// A tensor whose shape is still unknown (as ONNX shape inference sometimes leaves them).
inline Tensor Unshaped(const std::string& name) {
  Tensor tensor;
  tensor.name = name;
  return tensor;
}

inline Tensor IntConstant(const std::string& name, std::vector<int64_t> shape,
                          std::vector<int64_t> values) {
  Tensor tensor = Activation(name, std::move(shape), ElemType::kInt64);
  tensor.is_constant = true;
  tensor.int_data = std::move(values);
  return tensor;
}

inline Tensor FloatConstant(const std::string& name, std::vector<int64_t> shape,
                            std::vector<double> values) {
  Tensor tensor = Activation(name, std::move(shape));
  tensor.is_constant = true;
  tensor.float_data = std::move(values);
  return tensor;
}

/// A constant of `shape` filled with 0.01 * index.
inline Tensor Weights(const std::string& name, std::vector<int64_t> shape) {
  std::vector<double> values(NumElements(shape));
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.01 * static_cast<double>(i);
  return FloatConstant(name, std::move(shape), std::move(values));
}

inline Attribute IntAttr(int64_t value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kInt;
  attribute.i = value;
  return attribute;
}

inline Attribute FloatAttr(float value) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kFloat;
  attribute.f = value;
  return attribute;
}

inline Attribute IntsAttr(std::vector<int64_t> values) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kInts;
  attribute.ints = std::move(values);
  return attribute;
}

inline Node MakeNode(const std::string& op_type, const std::string& name,
                     std::vector<std::string> inputs, std::vector<std::string> outputs,
                     std::map<std::string, Attribute> attributes = {}) {
  Node node;
  node.op_type = op_type;
  node.name = name;
  node.inputs = std::move(inputs);
  node.outputs = std::move(outputs);
  node.attributes = std::move(attributes);
  return node;
}

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

}  // namespace gtco::graph::testing
