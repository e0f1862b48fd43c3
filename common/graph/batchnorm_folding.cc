// BatchNormalization folding: into the producing Conv, or into a per-channel Mul + Add.
#include "common/graph/batchnorm_folding.h"

#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/util/status.h"

namespace gtco::graph {

namespace {

std::atomic<bool> broken_for_testing{false};

absl::Status BnError(absl::StatusCode code, const Node& node, const std::string& why) {
  return absl::Status(code, absl::StrCat("ONNX op 'BatchNormalization' at node '", node.name,
                                         "': ", why));
}

bool IsUsedOutput(const Graph& graph, const std::string& tensor,
                  const std::map<std::string, std::vector<int>>& consumers) {
  if (tensor.empty()) return false;
  for (const std::string& output : graph.outputs) {
    if (output == tensor) return true;
  }
  return consumers.count(tensor) > 0;
}

/// Index of the node producing `tensor`, or -1.
int ProducerOf(const Graph& graph, const std::string& tensor) {
  for (size_t index = 0; index < graph.nodes.size(); ++index) {
    for (const std::string& output : graph.nodes[index].outputs) {
      if (output == tensor) return static_cast<int>(index);
    }
  }
  return -1;
}

/// Folds BN node `bn_index` into its producing Conv when possible; true when it did.
bool FoldIntoConv(Graph& graph, int bn_index, const std::vector<double>& a,
                  const std::vector<double>& b,
                  const std::map<std::string, std::vector<int>>& consumers) {
  const Node& bn = graph.nodes[bn_index];
  const std::string& x = bn.inputs[0];
  const int conv_index = ProducerOf(graph, x);
  if (conv_index < 0) return false;
  Node& conv = graph.nodes[conv_index];
  if (conv.op_type != "Conv" || !conv.domain.empty() || conv.inputs.size() < 2) return false;
  auto readers = consumers.find(x);
  if (readers == consumers.end() || readers->second.size() != 1) return false;
  for (const std::string& output : graph.outputs) {
    if (output == x) return false;
  }
  const Tensor* weights = graph.FindTensor(conv.inputs[1]);
  if (weights == nullptr || !weights->is_constant || !IsFloating(weights->type) ||
      weights->shape.empty() || weights->shape[0] != static_cast<int64_t>(a.size())) {
    return false;
  }
  const bool has_bias = conv.inputs.size() > 2 && !conv.inputs[2].empty();
  const Tensor* bias = has_bias ? graph.FindTensor(conv.inputs[2]) : nullptr;
  if (has_bias && (bias == nullptr || !bias->is_constant ||
                   bias->NumElements() != static_cast<int64_t>(a.size()))) {
    return false;
  }
  const int64_t channels = static_cast<int64_t>(a.size());
  const int64_t per_channel = weights->NumElements() / channels;
  std::vector<double> new_weights(weights->float_data.size());
  for (int64_t k = 0; k < channels; ++k) {
    for (int64_t i = 0; i < per_channel; ++i) {
      new_weights[k * per_channel + i] = weights->float_data[k * per_channel + i] * a[k];
    }
  }
  std::vector<double> new_bias(channels);
  for (int64_t k = 0; k < channels; ++k) {
    new_bias[k] = (has_bias ? bias->ValueAsDouble(k) * a[k] : 0.0) + b[k];
  }
  const std::string weight_name =
      graph.AddFloatConstant(absl::StrCat(conv.inputs[1], "_bn"), ElemType::kFloat32,
                             weights->shape, std::move(new_weights));
  const std::string bias_name = graph.AddFloatConstant(absl::StrCat(bn.name, "_folded_bias"),
                                                       ElemType::kFloat32, {channels},
                                                       std::move(new_bias));
  conv.inputs.resize(3);
  conv.inputs[1] = weight_name;
  conv.inputs[2] = bias_name;
  // The conv now produces the BN's output; the BN node goes.
  const std::string y = bn.outputs[0];
  const Tensor y_tensor = graph.tensor(y);
  conv.outputs[0] = y;
  graph.SetTensor(y_tensor);
  graph.nodes.erase(graph.nodes.begin() + bn_index);
  return true;
}

}  // namespace

void BreakBatchNormFoldingForTesting(bool broken) { broken_for_testing = broken; }

absl::Status FoldBatchNorm(Graph& graph) {
  for (size_t index = 0; index < graph.nodes.size(); ++index) {
    if (graph.nodes[index].op_type != "BatchNormalization" || !graph.nodes[index].domain.empty()) {
      continue;
    }
    const auto consumers = graph.ConsumerMap();
    const Node bn = graph.nodes[index];
    if (bn.IntAttr("training_mode", 0) != 0) {
      return BnError(absl::StatusCode::kUnimplemented, bn,
                     "training_mode=1 is not supported; export the model in eval mode");
    }
    for (size_t output = 1; output < bn.outputs.size(); ++output) {
      if (IsUsedOutput(graph, bn.outputs[output], consumers)) {
        return BnError(absl::StatusCode::kUnimplemented, bn,
                       "the running mean/variance outputs are not supported");
      }
    }
    if (bn.inputs.size() != 5) {
      return BnError(absl::StatusCode::kInvalidArgument, bn, "needs inputs X, scale, B, mean, var");
    }
    const Tensor& x = graph.tensor(bn.inputs[0]);
    if (!x.has_shape || x.shape.size() < 2) {
      return BnError(absl::StatusCode::kInvalidArgument, bn,
                     "X needs a static shape with a channel dim");
    }
    const int64_t channels = x.shape[1];
    std::vector<const Tensor*> params;
    for (size_t input = 1; input < 5; ++input) {
      const Tensor& param = graph.tensor(bn.inputs[input]);
      if (!param.is_constant) {
        return BnError(absl::StatusCode::kUnimplemented, bn,
                       absl::StrCat("input '", param.name,
                                    "' is computed at run time; only constant scale, bias, mean "
                                    "and variance fold"));
      }
      if (param.NumElements() != channels) {
        return BnError(absl::StatusCode::kInvalidArgument, bn,
                       absl::StrCat("input '", param.name, "' has ", param.NumElements(),
                                    " values for ", channels, " channels"));
      }
      params.push_back(&param);
    }
    const double epsilon = bn.FloatAttr("epsilon", 1e-5f);
    std::vector<double> a(channels), b(channels);
    for (int64_t c = 0; c < channels; ++c) {
      a[c] = params[0]->ValueAsDouble(c) / std::sqrt(params[3]->ValueAsDouble(c) + epsilon);
      b[c] = params[1]->ValueAsDouble(c) - params[2]->ValueAsDouble(c) * a[c];
      if (broken_for_testing.load()) a[c] *= 1.5;
    }
    if (FoldIntoConv(graph, static_cast<int>(index), a, b, consumers)) {
      --index;  // the node at `index` was erased
      continue;
    }
    // y = x * a + b with a, b of shape [C, 1, ...] (broadcast over the spatial dims).
    std::vector<int64_t> param_shape(x.shape.size() - 1, 1);
    param_shape[0] = channels;
    const std::string scale_name =
        graph.AddFloatConstant(absl::StrCat(bn.name, "_scale"), ElemType::kFloat32, param_shape, a);
    const std::string shift_name =
        graph.AddFloatConstant(absl::StrCat(bn.name, "_shift"), ElemType::kFloat32, param_shape, b);
    const std::string scaled_name = graph.FreshName(absl::StrCat(bn.name, "_scaled"));
    Tensor scaled = x;
    scaled.name = scaled_name;
    scaled.is_constant = false;
    scaled.float_data.clear();
    scaled.int_data.clear();
    graph.SetTensor(scaled);
    Node mul;
    mul.op_type = "Mul";
    mul.name = graph.FreshName(absl::StrCat(bn.name, "_mul"));
    mul.inputs = {bn.inputs[0], scale_name};
    mul.outputs = {scaled_name};
    Node add;
    add.op_type = "Add";
    add.name = graph.FreshName(absl::StrCat(bn.name, "_add"));
    add.inputs = {scaled_name, shift_name};
    add.outputs = {bn.outputs[0]};
    graph.nodes[index] = add;
    graph.nodes.insert(graph.nodes.begin() + index, mul);
    ++index;
  }
  return absl::OkStatus();
}

}  // namespace gtco::graph
