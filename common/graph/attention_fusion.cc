// Attention fusion: pattern matching from each Softmax outwards (scale, scores MatMul, K's
// Transpose, final MatMul) and the kAttention head of a match.
#include "common/graph/attention_fusion.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "common/ir/attention.h"

namespace gtco::graph {
namespace {

using Shape = std::vector<int64_t>;

class Matcher {
 public:
  Matcher(const Graph& graph, const AttentionOptions& options)
      : graph_(graph), options_(options), consumers_(graph.ConsumerMap()) {
    for (int index = 0; index < static_cast<int>(graph.nodes.size()); ++index) {
      for (const std::string& output : graph.nodes[index].outputs) producers_[output] = index;
    }
  }

  /// The attention whose Softmax is node `softmax_index`, if the pattern holds around it.
  std::optional<AttentionMatch> MatchAt(int softmax_index) const;

 private:
  const Node& NodeAt(int index) const { return graph_.nodes[index]; }
  const Shape& ShapeOf(const std::string& tensor) const { return graph_.tensor(tensor).shape; }

  /// The node producing `tensor`; -1 for graph inputs and constants.
  int Producer(const std::string& tensor) const {
    auto it = producers_.find(tensor);
    return it == producers_.end() ? -1 : it->second;
  }

  /// True when node `reader` is the only reader of `tensor` and it is no graph output.
  bool OnlyReadBy(const std::string& tensor, int reader) const {
    if (std::find(graph_.outputs.begin(), graph_.outputs.end(), tensor) != graph_.outputs.end()) {
      return false;
    }
    auto it = consumers_.find(tensor);
    if (it == consumers_.end() || it->second.empty()) return false;
    return std::all_of(it->second.begin(), it->second.end(),
                       [reader](int consumer) { return consumer == reader; });
  }

  bool IsScalarConstant(const std::string& tensor) const {
    const Tensor* found = graph_.FindTensor(tensor);
    return found != nullptr && found->is_constant && IsFloating(found->type) &&
           found->NumElements() == 1;
  }

  bool IsF32(const std::string& tensor) const {
    return graph_.tensor(tensor).type == ElemType::kFloat32;
  }

  /// Whether the Softmax node works on the last axis (the default axis as in LowerAnchor).
  bool SoftmaxOnLastAxis(const Node& softmax) const {
    const int64_t rank = static_cast<int64_t>(ShapeOf(softmax.inputs[0]).size());
    int64_t axis = softmax.IntAttr("axis", graph_.opset >= 13 || graph_.opset == 0 ? -1 : 1);
    if (axis < 0) axis += rank;
    return rank >= 2 && axis == rank - 1;
  }

  /// Follows an optional Mul/Div by a scalar constant back from `scores` (the Softmax input,
  /// read by `reader`): then `scores` becomes the scale node's operand, `reader` the scale node,
  /// and `scale` and `nodes` take it in. False when a Mul/Div is there but is no usable scale.
  bool MatchScale(std::string& scores, int& reader, double& scale, std::vector<int>& nodes) const;

  /// Absorbs a Transpose(perm = [..., r-1, r-2]) producing match.k (K^T) when `k_reader` (the
  /// scores MatMul, or the scale of K^T the match took in) is its only reader.
  void MatchKTranspose(int k_reader, AttentionMatch& match) const;

  /// Follows an optional Add of a mask back from `scores` (the Softmax input, read by
  /// `reader`), like MatchScale; sets match.mask and params.mask_groups. False when the Add
  /// is there but its other operand is no mask the workload can take.
  bool MatchMask(std::string& scores, int& reader, AttentionMatch& match) const;

  const Graph& graph_;
  AttentionOptions options_;
  std::map<std::string, std::vector<int>> consumers_;
  std::map<std::string, int> producers_;
};

bool Matcher::MatchScale(std::string& scores, int& reader, double& scale,
                         std::vector<int>& nodes) const {
  const int producer = Producer(scores);
  if (producer < 0) return false;
  const Node& node = NodeAt(producer);
  if (node.op_type != "Mul" && node.op_type != "Div") return true;  // no scale node
  if (node.inputs.size() != 2 || node.outputs.size() != 1) return false;
  int constant_side = -1;
  if (IsScalarConstant(node.inputs[1])) {
    constant_side = 1;
  } else if (node.op_type == "Mul" && IsScalarConstant(node.inputs[0])) {
    constant_side = 0;
  }
  if (constant_side < 0) return false;
  const std::string& operand = node.inputs[1 - constant_side];
  if (ShapeOf(operand) != ShapeOf(node.outputs[0])) return false;  // no broadcast to a new rank
  const double value = graph_.tensor(node.inputs[constant_side]).ValueAsDouble(0);
  scale = node.op_type == "Mul" ? value : 1.0 / value;
  if (!std::isfinite(static_cast<float>(scale))) return false;
  nodes.push_back(producer);
  scores = operand;
  reader = producer;
  return true;
}

bool Matcher::MatchMask(std::string& scores, int& reader, AttentionMatch& match) const {
  const int producer = Producer(scores);
  if (producer < 0 || NodeAt(producer).op_type != "Add") return true;  // no mask
  const Node& node = NodeAt(producer);
  if (!options_.allow_mask || node.inputs.size() != 2 || node.outputs.size() != 1) return false;
  const Shape& out = ShapeOf(node.outputs[0]);
  const size_t rank = out.size();
  for (int side = 0; side < 2; ++side) {
    const std::string& operand = node.inputs[side];
    const std::string& mask = node.inputs[1 - side];
    if (ShapeOf(operand) != out || !IsF32(mask) || !OnlyReadBy(operand, producer)) continue;
    // The mask right-aligned to the scores' rank: [g_0 .. g_t, 1 .. 1 (batch), 1, seq_k].
    Shape aligned = ShapeOf(mask);
    if (aligned.size() > rank || rank < 2) continue;
    aligned.insert(aligned.begin(), rank - aligned.size(), 1);
    if (aligned[rank - 1] != out[rank - 1] || aligned[rank - 2] != 1) continue;
    size_t leading = 0;
    while (leading < rank - 2 && aligned[leading] == out[leading]) ++leading;
    bool trailing_ones = true;
    for (size_t axis = leading; axis < rank - 2; ++axis) trailing_ones &= aligned[axis] == 1;
    if (!trailing_ones) continue;
    match.mask = mask;
    match.params.mask_groups = NumElements(Shape(aligned.begin(), aligned.begin() + leading));
    match.nodes.push_back(producer);
    scores = operand;
    reader = producer;
    return true;
  }
  return false;
}

void Matcher::MatchKTranspose(int k_reader, AttentionMatch& match) const {
  const std::string k_t = match.k;
  const int producer = Producer(k_t);
  if (producer < 0 || NodeAt(producer).op_type != "Transpose" || !OnlyReadBy(k_t, k_reader)) {
    return;
  }
  const Node& transpose = NodeAt(producer);
  const int64_t rank = static_cast<int64_t>(ShapeOf(k_t).size());
  std::vector<int64_t> swap_last_two(rank);
  for (int64_t axis = 0; axis < rank; ++axis) swap_last_two[axis] = axis;
  std::swap(swap_last_two[rank - 1], swap_last_two[rank - 2]);
  if (transpose.inputs.empty() || transpose.IntsAttr("perm") != swap_last_two) return;
  match.k = transpose.inputs[0];
  match.params.k_transposed = false;
  match.nodes.push_back(producer);
}

std::optional<AttentionMatch> Matcher::MatchAt(int softmax_index) const {
  const Node& softmax = NodeAt(softmax_index);
  if (softmax.op_type != "Softmax" || softmax.inputs.empty() || softmax.outputs.size() != 1 ||
      !SoftmaxOnLastAxis(softmax)) {
    return std::nullopt;
  }
  // Softmax -> final MatMul (P is its A operand).
  const std::string& probs = softmax.outputs[0];
  auto readers = consumers_.find(probs);
  if (readers == consumers_.end() || readers->second.empty()) return std::nullopt;
  const int final_matmul = readers->second.front();
  const Node& out_mm = NodeAt(final_matmul);
  if (out_mm.op_type != "MatMul" || out_mm.inputs.size() != 2 || out_mm.inputs[0] != probs ||
      out_mm.inputs[1] == probs || !OnlyReadBy(probs, final_matmul)) {
    return std::nullopt;
  }
  // Optional scale, then the scores MatMul.
  AttentionMatch match;
  match.nodes = {softmax_index, final_matmul};
  std::string scores = softmax.inputs[0];
  if (!OnlyReadBy(scores, softmax_index)) return std::nullopt;
  double scale = 1.0;
  int scores_reader = softmax_index;
  if (!MatchMask(scores, scores_reader, match)) return std::nullopt;
  if (!MatchScale(scores, scores_reader, scale, match.nodes)) return std::nullopt;
  const int scores_matmul = Producer(scores);
  if (scores_matmul < 0 || NodeAt(scores_matmul).op_type != "MatMul" ||
      !OnlyReadBy(scores, scores_reader)) {
    return std::nullopt;
  }
  const Node& scores_mm = NodeAt(scores_matmul);
  if (scores_mm.inputs.size() != 2) return std::nullopt;
  match.nodes.push_back(scores_matmul);
  match.final_matmul = final_matmul;
  match.q = scores_mm.inputs[0];
  match.k = scores_mm.inputs[1];
  match.v = out_mm.inputs[1];
  // A scalar scale of Q or of K^T (PyTorch's MultiheadAttention divides Q by sqrt(d) before the
  // scores MatMul) scales the scores alike: it joins the attention's scale.
  int k_reader = scores_matmul;
  for (std::string* operand : {&match.q, &match.k}) {
    std::string unscaled = *operand;
    int reader = scores_matmul;
    double factor = 1.0;
    std::vector<int> scale_nodes;
    // (Q and K^T may be one scaled tensor: its scale node is taken once, for Q.)
    if (OnlyReadBy(unscaled, scores_matmul) &&
        MatchScale(unscaled, reader, factor, scale_nodes) && !scale_nodes.empty() &&
        std::find(match.nodes.begin(), match.nodes.end(), scale_nodes[0]) == match.nodes.end() &&
        std::isfinite(static_cast<float>(scale * factor))) {
      scale *= factor;
      *operand = unscaled;
      if (operand == &match.k) k_reader = reader;
      match.nodes.insert(match.nodes.end(), scale_nodes.begin(), scale_nodes.end());
    }
  }
  for (const std::string& tensor : {match.q, match.k, match.v, out_mm.outputs.at(0)}) {
    if (!IsF32(tensor)) return std::nullopt;
  }
  // Shapes: Q [..., sq, d], K^T [..., d, sk], V [..., sk, dv] with equal batch dims.
  const Shape& q = ShapeOf(match.q);
  const Shape& k_t = ShapeOf(match.k);
  const Shape& v = ShapeOf(match.v);
  const size_t rank = q.size();
  if (rank < 2 || k_t.size() != rank || v.size() != rank ||
      !std::equal(q.begin(), q.end() - 2, k_t.begin()) ||
      !std::equal(q.begin(), q.end() - 2, v.begin()) || k_t[rank - 2] != q[rank - 1] ||
      v[rank - 2] != k_t[rank - 1]) {
    return std::nullopt;
  }
  ir::AttentionParams& p = match.params;
  p.batch = NumElements(Shape(q.begin(), q.end() - 2));
  p.seq_q = q[rank - 2];
  p.head_dim = q[rank - 1];
  p.seq_k = k_t[rank - 1];
  p.value_dim = v[rank - 1];
  p.scale = static_cast<float>(scale);
  p.k_transposed = true;
  if (options_.absorb_k_transpose) MatchKTranspose(k_reader, match);
  std::sort(match.nodes.begin(), match.nodes.end());
  return match;
}

}  // namespace

std::vector<AttentionMatch> FindAttentionPatterns(const Graph& graph,
                                                  const AttentionOptions& options) {
  Matcher matcher(graph, options);
  std::vector<AttentionMatch> matches;
  std::set<int> used;
  for (int index = 0; index < static_cast<int>(graph.nodes.size()); ++index) {
    std::optional<AttentionMatch> match = matcher.MatchAt(index);
    if (!match) continue;
    const bool overlaps = std::any_of(match->nodes.begin(), match->nodes.end(),
                                      [&](int node) { return used.count(node) > 0; });
    if (overlaps) continue;
    used.insert(match->nodes.begin(), match->nodes.end());
    matches.push_back(std::move(*match));
  }
  std::sort(matches.begin(), matches.end(), [](const AttentionMatch& a, const AttentionMatch& b) {
    return a.final_matmul < b.final_matmul;
  });
  return matches;
}

AnchorHead AttentionHead(const AttentionMatch& match, const Graph& graph) {
  AnchorHead head;
  head.workload = ir::MakeAttentionWorkload(match.params);
  head.onnx_output = graph.nodes[match.final_matmul].outputs.at(0);
  head.onnx_shape = graph.tensor(head.onnx_output).shape;
  head.result.kind = ir::Operand::Kind::kAcc;
  return head;
}

}  // namespace gtco::graph
