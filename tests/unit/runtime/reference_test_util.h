// Helpers for the reference op tests: building nodes, attributes and values, running one op.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/reference_ops.h"

namespace gtco::runtime::reference::reftest {

inline Attr IntAttr(int64_t value) {
  Attr attr;
  attr.kind = Attr::Kind::kInt;
  attr.i = value;
  return attr;
}

inline Attr FloatAttr(double value) {
  Attr attr;
  attr.kind = Attr::Kind::kFloat;
  attr.f = value;
  return attr;
}

inline Attr StringAttr(std::string value) {
  Attr attr;
  attr.kind = Attr::Kind::kString;
  attr.s = std::move(value);
  return attr;
}

inline Attr IntsAttr(std::vector<int64_t> values) {
  Attr attr;
  attr.kind = Attr::Kind::kInts;
  attr.ints = std::move(values);
  return attr;
}

inline Attr FloatsAttr(std::vector<double> values) {
  Attr attr;
  attr.kind = Attr::Kind::kFloats;
  attr.floats = std::move(values);
  return attr;
}

inline Value Tensor(ElemType dtype, std::vector<int64_t> shape, std::vector<double> data) {
  Value value;
  value.dtype = dtype;
  value.shape = std::move(shape);
  value.data = std::move(data);
  return value;
}

/// An f32 tensor.
inline Value F32(std::vector<int64_t> shape, std::vector<double> data) {
  return Tensor(ElemType::kF32, std::move(shape), std::move(data));
}

/// An i64 tensor.
inline Value I64(std::vector<int64_t> shape, std::vector<double> data) {
  return Tensor(ElemType::kI64, std::move(shape), std::move(data));
}

/// 0, 1, ..., n - 1 as f32 of `shape`.
inline Value Iota(std::vector<int64_t> shape, double start = 0) {
  Value value = F32(std::move(shape), {});
  for (int64_t i = 0; i < value.NumElements(); ++i) value.data.push_back(start + i);
  return value;
}

inline Attr TensorAttr(Value value) {
  Attr attr;
  attr.kind = Attr::Kind::kTensor;
  attr.tensor.push_back(std::move(value));
  return attr;
}

inline Node MakeNode(std::string op_type, std::map<std::string, Attr> attrs = {}, int opset = 17) {
  Node node;
  node.op_type = std::move(op_type);
  node.name = "node_" + node.op_type;
  node.attrs = std::move(attrs);
  node.opset = opset;
  return node;
}

/// Runs `node` on `inputs` (a null entry: an omitted input), expecting success.
inline std::vector<Value> RunAll(const Node& node, const std::vector<const Value*>& inputs,
                                 int num_outputs = 1) {
  absl::StatusOr<std::vector<Value>> outputs = RunOp(node, inputs, num_outputs);
  EXPECT_TRUE(outputs.ok()) << outputs.status();
  if (!outputs.ok()) return std::vector<Value>(num_outputs);
  return *std::move(outputs);
}

/// Runs a one-output `node` and returns its output.
inline Value Run1(const Node& node, const std::vector<const Value*>& inputs) {
  return RunAll(node, inputs, 1)[0];
}

/// Expects `value` to have `shape` and `data` (within `tolerance`, NaN matching NaN).
inline void ExpectValue(const Value& value, const std::vector<int64_t>& shape,
                        const std::vector<double>& data, double tolerance = 1e-6) {
  EXPECT_EQ(value.shape, shape);
  ASSERT_EQ(value.data.size(), data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    if (std::isnan(data[i])) {
      EXPECT_TRUE(std::isnan(value.data[i])) << "at " << i;
    } else if (std::isinf(data[i])) {
      EXPECT_EQ(value.data[i], data[i]) << "at " << i;
    } else {
      EXPECT_NEAR(value.data[i], data[i], tolerance) << "at " << i;
    }
  }
}

}  // namespace gtco::runtime::reference::reftest
