// Graph IR: a dataflow graph of named tensors and op nodes imported from a model file.
//
// Semantics:
//  - Tensors are identified by name; every tensor has an element type and, once shapes are
//    known, a static shape (no symbolic dims: the importer resolves or rejects them).
//  - A constant tensor carries its values: floating types in `float_data` (as double, which
//    holds every f32/f16/bf16 value exactly), integer and bool types in `int_data`.
//  - Nodes are kept in topological order; an empty input name is an omitted optional input.
//  - Op types and attribute names follow ONNX (default domain); the graph IR itself has no
//    dependency on ONNX protobuf types.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gtco::graph {

enum class ElemType {
  kFloat32,
  kFloat64,
  kFloat16,
  kBFloat16,
  kInt8,
  kUInt8,
  kInt32,
  kInt64,
  kBool,
  kOther
};

/// "f32", "f64", "f16", "bf16", "i8", "u8", "i32", "i64", "bool", "other".
const char* ElemTypeName(ElemType type);
/// True for the floating types (their constant values live in Tensor::float_data).
bool IsFloating(ElemType type);

/// Number of elements of a shape (1 for a scalar).
int64_t NumElements(const std::vector<int64_t>& shape);
/// "[1,16,64]".
std::string ShapeString(const std::vector<int64_t>& shape);

struct Tensor {
  std::string name;
  ElemType type = ElemType::kFloat32;
  bool has_shape = false;  ///< false until a static shape is known
  std::vector<int64_t> shape;
  bool is_constant = false;
  std::vector<double> float_data;  ///< constant values of floating types
  std::vector<int64_t> int_data;   ///< constant values of integer and bool types

  int64_t NumElements() const { return graph::NumElements(shape); }
  /// Element `index` of a constant, as double (ints converted).
  double ValueAsDouble(int64_t index) const;
  /// Element `index` of a constant, as int64 (floats truncated, see TruncateToInt64).
  int64_t ValueAsInt(int64_t index) const;
};

/// `value` truncated toward zero into int64 without undefined behaviour: NaN is 0 and values
/// beyond int64's range saturate (a C++ cast of such a double is undefined).
int64_t TruncateToInt64(double value);

struct Attribute {
  enum class Kind { kInt, kFloat, kString, kInts, kFloats, kTensor, kOther };
  Kind kind = Kind::kOther;
  int64_t i = 0;
  float f = 0.0f;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<Tensor> tensor;  ///< exactly one element when kind == kTensor
};

struct Node {
  std::string op_type;
  std::string name;    ///< unique; the importer names nameless nodes "<op_type>_<index>"
  std::string domain;  ///< "" for the default ONNX domain
  std::vector<std::string> inputs;   ///< tensor names; "" = omitted optional input
  std::vector<std::string> outputs;  ///< tensor names; "" = unused optional output
  std::map<std::string, Attribute> attributes;

  bool HasAttr(const std::string& attr_name) const { return attributes.count(attr_name) > 0; }
  /// Integer attribute or `fallback` when absent.
  int64_t IntAttr(const std::string& attr_name, int64_t fallback) const;
  /// Float attribute or `fallback` when absent.
  float FloatAttr(const std::string& attr_name, float fallback) const;
  /// Integer-list attribute or empty when absent.
  std::vector<int64_t> IntsAttr(const std::string& attr_name) const;
};

/// A model graph. Not thread-safe; passes mutate it in place.
class Graph {
 public:
  std::string name;
  int opset = 0;                    ///< default-domain opset version
  std::vector<Node> nodes;          ///< topological order
  std::vector<std::string> inputs;  ///< runtime inputs (not constants)
  std::vector<std::string> outputs;

  /// Adds or replaces the tensor named `tensor.name`.
  void SetTensor(Tensor tensor);
  bool HasTensor(const std::string& tensor_name) const;
  /// The tensor named `tensor_name`; GTCO_CHECKs that it exists.
  const Tensor& tensor(const std::string& tensor_name) const;
  Tensor& mutable_tensor(const std::string& tensor_name);
  /// nullptr when absent.
  const Tensor* FindTensor(const std::string& tensor_name) const;
  /// True when `tensor_name` names a tensor holding constant data.
  bool IsConstant(const std::string& tensor_name) const;
  const std::map<std::string, Tensor>& tensors() const { return tensors_; }

  /// Consumers of each tensor: tensor name -> indices into `nodes`.
  std::map<std::string, std::vector<int>> ConsumerMap() const;
  /// Removes nodes whose outputs nobody reads and that produce no graph output.
  void RemoveDeadNodes();
  /// A name starting with `base` that no tensor and no node has (`base`, else `base_1`, ...), for
  /// the tensors and nodes a pass adds.
  std::string FreshName(const std::string& base) const;
  /// Adds a constant tensor named FreshName(`base`) of `type` and static `shape` holding `values`
  /// (int_data: integer and bool types) and returns its name.
  std::string AddIntConstant(const std::string& base, ElemType type, std::vector<int64_t> shape,
                             std::vector<int64_t> values);
  /// The same with floating-point `values` (float_data).
  std::string AddFloatConstant(const std::string& base, ElemType type, std::vector<int64_t> shape,
                               std::vector<double> values);
  /// Adds a computed tensor named FreshName(`base`) of `type` and static `shape`; returns its name.
  std::string AddActivation(const std::string& base, ElemType type, std::vector<int64_t> shape);

 private:
  std::map<std::string, Tensor> tensors_;
};

}  // namespace gtco::graph
