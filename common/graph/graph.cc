// Graph IR accessors and dead-node removal.
#include "common/graph/graph.h"

#include <cmath>
#include <limits>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/util/status.h"

namespace gtco::graph {

const char* ElemTypeName(ElemType type) {
  switch (type) {
    case ElemType::kFloat32:
      return "f32";
    case ElemType::kFloat64:
      return "f64";
    case ElemType::kFloat16:
      return "f16";
    case ElemType::kBFloat16:
      return "bf16";
    case ElemType::kInt8:
      return "i8";
    case ElemType::kUInt8:
      return "u8";
    case ElemType::kInt32:
      return "i32";
    case ElemType::kInt64:
      return "i64";
    case ElemType::kBool:
      return "bool";
    case ElemType::kOther:
      return "other";
  }
  return "other";
}

bool IsFloating(ElemType type) {
  return type == ElemType::kFloat32 || type == ElemType::kFloat64 || type == ElemType::kFloat16 ||
         type == ElemType::kBFloat16;
}

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

double Tensor::ValueAsDouble(int64_t index) const {
  return IsFloating(type) ? float_data[index] : static_cast<double>(int_data[index]);
}

int64_t TruncateToInt64(double value) {
  if (std::isnan(value)) return 0;
  // 2^63 is exactly representable; every double below it (and >= -2^63) converts.
  constexpr double kLimit = 9223372036854775808.0;
  if (value >= kLimit) return std::numeric_limits<int64_t>::max();
  if (value < -kLimit) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

int64_t Tensor::ValueAsInt(int64_t index) const {
  return IsFloating(type) ? TruncateToInt64(float_data[index]) : int_data[index];
}

int64_t Node::IntAttr(const std::string& attr_name, int64_t fallback) const {
  auto it = attributes.find(attr_name);
  return it == attributes.end() ? fallback : it->second.i;
}

float Node::FloatAttr(const std::string& attr_name, float fallback) const {
  auto it = attributes.find(attr_name);
  return it == attributes.end() ? fallback : it->second.f;
}

std::vector<int64_t> Node::IntsAttr(const std::string& attr_name) const {
  auto it = attributes.find(attr_name);
  return it == attributes.end() ? std::vector<int64_t>{} : it->second.ints;
}

void Graph::SetTensor(Tensor tensor) {
  std::string key = tensor.name;
  tensors_[key] = std::move(tensor);
}

bool Graph::HasTensor(const std::string& tensor_name) const {
  return tensors_.count(tensor_name) > 0;
}

const Tensor& Graph::tensor(const std::string& tensor_name) const {
  auto it = tensors_.find(tensor_name);
  GTCO_CHECK(it != tensors_.end(), "no tensor named '", tensor_name, "'");
  return it->second;
}

Tensor& Graph::mutable_tensor(const std::string& tensor_name) {
  auto it = tensors_.find(tensor_name);
  GTCO_CHECK(it != tensors_.end(), "no tensor named '", tensor_name, "'");
  return it->second;
}

const Tensor* Graph::FindTensor(const std::string& tensor_name) const {
  auto it = tensors_.find(tensor_name);
  return it == tensors_.end() ? nullptr : &it->second;
}

bool Graph::IsConstant(const std::string& tensor_name) const {
  const Tensor* found = FindTensor(tensor_name);
  return found != nullptr && found->is_constant;
}

std::map<std::string, std::vector<int>> Graph::ConsumerMap() const {
  std::map<std::string, std::vector<int>> consumers;
  for (size_t node_index = 0; node_index < nodes.size(); ++node_index) {
    for (const std::string& input : nodes[node_index].inputs) {
      if (!input.empty()) consumers[input].push_back(static_cast<int>(node_index));
    }
  }
  return consumers;
}

void Graph::RemoveDeadNodes() {
  std::set<std::string> live(outputs.begin(), outputs.end());
  std::vector<bool> keep(nodes.size(), false);
  for (size_t i = nodes.size(); i-- > 0;) {
    for (const std::string& output : nodes[i].outputs) {
      if (!output.empty() && live.count(output)) keep[i] = true;
    }
    if (!keep[i]) continue;
    for (const std::string& input : nodes[i].inputs) {
      if (!input.empty()) live.insert(input);
    }
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (keep[i]) kept.push_back(std::move(nodes[i]));
  }
  nodes = std::move(kept);
}

std::string Graph::FreshName(const std::string& base) const {
  auto taken = [&](const std::string& name) {
    if (HasTensor(name)) return true;
    for (const Node& node : nodes) {
      if (node.name == name) return true;
    }
    return false;
  };
  std::string name = base;
  for (int suffix = 1; taken(name); ++suffix) name = absl::StrCat(base, "_", suffix);
  return name;
}

std::string Graph::AddActivation(const std::string& base, ElemType type,
                                 std::vector<int64_t> shape) {
  Tensor tensor;
  tensor.name = FreshName(base);
  tensor.type = type;
  tensor.has_shape = true;
  tensor.shape = std::move(shape);
  const std::string name = tensor.name;
  SetTensor(std::move(tensor));
  return name;
}

std::string Graph::AddIntConstant(const std::string& base, ElemType type,
                                  std::vector<int64_t> shape, std::vector<int64_t> values) {
  const std::string name = AddActivation(base, type, std::move(shape));
  Tensor& tensor = tensors_.at(name);
  tensor.is_constant = true;
  tensor.int_data = std::move(values);
  return name;
}

std::string Graph::AddFloatConstant(const std::string& base, ElemType type,
                                    std::vector<int64_t> shape, std::vector<double> values) {
  const std::string name = AddActivation(base, type, std::move(shape));
  Tensor& tensor = tensors_.at(name);
  tensor.is_constant = true;
  tensor.float_data = std::move(values);
  return name;
}

}  // namespace gtco::graph
