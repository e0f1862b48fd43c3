// The bf16x3 activation split as one node (bf16x3_split.h).
#include "common/graph/bf16x3_split.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/ir/conv.h"

namespace gtco::graph {

namespace {

/// True when every reader of `split` (X' [N, 3C, H, W]) is a bias-free Conv of X' that the pair
/// layout suits (unit dilations, strides of at most ir::kConvPairMaxStride, one group, explicit
/// pads, pads and strides all the same, a bf16 weight, 3C even, S <= ir::kConvPairMaxKernelW):
/// their node indices in `convs`, the pads (top, left, bottom, right) in `pads`, the strides in
/// `strides`.
bool PairConvReaders(const Graph& graph, const std::map<std::string, std::vector<int>>& consumers,
                     const std::string& split, std::vector<int>* convs, std::vector<int64_t>* pads,
                     std::vector<int64_t>* strides) {
  auto found = consumers.find(split);
  if (found == consumers.end() || found->second.empty()) return false;
  for (const std::string& output : graph.outputs) {
    if (output == split) return false;
  }
  for (int index : found->second) {
    const Node& conv = graph.nodes[index];
    if (conv.op_type != "Conv" || !conv.domain.empty() || conv.inputs.size() != 2 ||
        conv.inputs[0] != split || conv.IntAttr("group", 1) != 1) {
      return false;
    }
    for (int64_t value : conv.IntsAttr("dilations")) {
      if (value != 1) return false;
    }
    std::vector<int64_t> conv_strides = conv.IntsAttr("strides");
    if (conv_strides.empty()) conv_strides = {1, 1};
    if (conv_strides.size() != 2) return false;
    for (int64_t value : conv_strides) {
      if (value < 1 || value > ir::kConvPairMaxStride) return false;
    }
    if (auto pad = conv.attributes.find("auto_pad");
        pad != conv.attributes.end() && pad->second.s != "NOTSET") {
      return false;
    }
    const Tensor* w = graph.FindTensor(conv.inputs[1]);
    if (w == nullptr || w->type != ElemType::kBFloat16 || !w->has_shape || w->shape.size() != 4 ||
        w->shape[3] > ir::kConvPairMaxKernelW || w->shape[1] % 2 != 0) {
      return false;
    }
    std::vector<int64_t> conv_pads = conv.IntsAttr("pads");
    if (conv_pads.empty()) conv_pads = {0, 0, 0, 0};
    if (conv_pads.size() != 4) return false;
    // ONNX orders pads [top, left, bottom, right] (begins, then ends).
    if (!convs->empty() && (conv_pads != *pads || conv_strides != *strides)) return false;
    *pads = conv_pads;
    *strides = conv_strides;
    convs->push_back(index);
  }
  return true;
}

/// Makes `node` (the split, or the cast, of image `x` into `parts` * C channels) write the pair
/// layout of the Convs `convs` (their pads and strides) and the Convs read it: the node's
/// attributes, the Convs' image attribute, the output's shape.
void WritePairLayout(Graph& graph, const Tensor& x, int64_t parts, const std::vector<int64_t>& pads,
                     const std::vector<int64_t>& strides, const std::vector<int>& convs,
                     Node& node) {
  ir::ConvParams p;  // the image, pads and strides: what the pair layout's shape depends on
  p.batch = x.shape[0];
  p.in_channels = parts * x.shape[1];
  p.in_h = x.shape[2];
  p.in_w = x.shape[3];
  p.pad_top = pads[0];
  p.pad_left = pads[1];
  p.pad_bottom = pads[2];
  p.pad_right = pads[3];
  p.stride_h = strides[0];
  p.stride_w = strides[1];
  p.x_pairs = true;
  Attribute pads_attr;
  pads_attr.kind = Attribute::Kind::kInts;
  pads_attr.ints = pads;
  node.attributes[kPairPadsAttr] = pads_attr;
  if (p.stride_h != 1 || p.stride_w != 1) {
    Attribute strides_attr;
    strides_attr.kind = Attribute::Kind::kInts;
    strides_attr.ints = strides;
    node.attributes[kPairStridesAttr] = strides_attr;
  }
  Attribute image;
  image.kind = Attribute::Kind::kInts;
  image.ints = {p.batch, p.in_channels, p.in_h, p.in_w};
  for (int index : convs) graph.nodes[index].attributes[kPairImageAttr] = image;
  graph.mutable_tensor(node.outputs[0]).shape = ir::ConvXShape(p);
}

}  // namespace

absl::Status FuseBf16x3Splits(Graph& graph) {
  std::map<std::string, int> producer;
  for (int i = 0; i < static_cast<int>(graph.nodes.size()); ++i) {
    for (const std::string& output : graph.nodes[i].outputs) producer[output] = i;
  }
  const std::map<std::string, std::vector<int>> consumers = graph.ConsumerMap();
  const std::set<std::string> outputs(graph.outputs.begin(), graph.outputs.end());
  // The node writing `tensor` when it is a default-domain `op`, else null.
  auto made_by = [&](const std::string& tensor, const char* op) -> const Node* {
    auto found = producer.find(tensor);
    if (found == producer.end()) return nullptr;
    const Node& node = graph.nodes[found->second];
    if (node.op_type != op || !node.domain.empty() || node.inputs.empty()) return nullptr;
    return &node;
  };
  // The Cast writing `tensor` when `tensor` is of `type`, else null.
  auto cast_to = [&](const std::string& tensor, ElemType type) -> const Node* {
    const Tensor* written = graph.FindTensor(tensor);
    return written != nullptr && written->type == type ? made_by(tensor, "Cast") : nullptr;
  };
  // True when exactly the nodes `readers` (by name) read `tensor` and it is no graph output.
  auto read_only_by = [&](const std::string& tensor, std::set<std::string> readers) {
    if (outputs.count(tensor)) return false;
    auto found = consumers.find(tensor);
    std::set<std::string> actual;
    if (found != consumers.end()) {
      for (int index : found->second) actual.insert(graph.nodes[index].name);
    }
    return actual == readers;
  };
  std::set<std::string> fused;  // names of the nodes the splits replace
  for (Node& concat : graph.nodes) {
    if (concat.op_type != "Concat" || !concat.domain.empty() || concat.inputs.size() != 3 ||
        concat.outputs.size() != 1 || concat.inputs[0] != concat.inputs[2]) {
      continue;
    }
    const Node* high = cast_to(concat.inputs[0], ElemType::kBFloat16);
    const Node* low = cast_to(concat.inputs[1], ElemType::kBFloat16);
    const Node* residual = low != nullptr ? made_by(low->inputs[0], "Sub") : nullptr;
    if (high == nullptr || residual == nullptr || residual->inputs.size() != 2 ||
        residual->inputs[0] != high->inputs[0]) {
      continue;
    }
    const Node* back = cast_to(residual->inputs[1], ElemType::kFloat32);
    if (back == nullptr || back->inputs[0] != concat.inputs[0]) continue;
    const Tensor* x = graph.FindTensor(high->inputs[0]);
    if (x == nullptr || x->is_constant || !x->has_shape || x->shape.empty() ||
        x->type != ElemType::kFloat32) {
      continue;
    }
    const int64_t rank = static_cast<int64_t>(x->shape.size());
    const int64_t axis = concat.IntAttr("axis", 0);
    // Along the channels of an image read only by Convs: the pair layout of their AMX kernel.
    std::vector<int64_t> pads, strides;
    std::vector<int> convs;
    const bool channels = rank == 4 && (axis == 1 || axis == -3);
    if (channels &&
        !PairConvReaders(graph, consumers, concat.outputs[0], &convs, &pads, &strides)) {
      continue;
    }
    if (!channels && axis != -1 && axis != rank - 1) continue;
    if (!read_only_by(high->outputs[0], {back->name, concat.name}) ||
        !read_only_by(back->outputs[0], {residual->name}) ||
        !read_only_by(residual->outputs[0], {low->name}) ||
        !read_only_by(low->outputs[0], {concat.name})) {
      continue;
    }
    fused.insert(high->name);
    fused.insert(back->name);
    fused.insert(residual->name);
    fused.insert(low->name);
    concat.op_type = kBf16x3SplitOp;
    concat.domain = kGtcoInternalDomain;
    concat.inputs = {high->inputs[0]};
    concat.attributes.clear();
    if (channels) WritePairLayout(graph, *x, /*parts=*/3, pads, strides, convs, concat);
  }
  // --precision bf16: a Cast of an image to bf16 read only by Convs writes their pair layout.
  for (Node& cast : graph.nodes) {
    if (cast.op_type != "Cast" || !cast.domain.empty() || cast.inputs.size() != 1 ||
        cast.outputs.size() != 1 || fused.count(cast.name)) {
      continue;
    }
    const Tensor* x = graph.FindTensor(cast.inputs[0]);
    const Tensor* y = graph.FindTensor(cast.outputs[0]);
    if (x == nullptr || y == nullptr || x->is_constant || !x->has_shape || x->shape.size() != 4 ||
        x->type != ElemType::kFloat32 || y->type != ElemType::kBFloat16) {
      continue;
    }
    std::vector<int64_t> pads, strides;
    std::vector<int> convs;
    if (!PairConvReaders(graph, consumers, cast.outputs[0], &convs, &pads, &strides)) continue;
    cast.op_type = kBf16PairsOp;
    cast.domain = kGtcoInternalDomain;
    cast.attributes.clear();
    WritePairLayout(graph, *x, /*parts=*/1, pads, strides, convs, cast);
  }
  graph.nodes.erase(std::remove_if(graph.nodes.begin(), graph.nodes.end(),
                                   [&](const Node& node) { return fused.count(node.name) > 0; }),
                    graph.nodes.end());
  return absl::OkStatus();
}

}  // namespace gtco::graph
