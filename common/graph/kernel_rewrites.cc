// Rewrites of common ops into ops the tuned kernels run (see kernel_rewrites.h).
#include "common/graph/kernel_rewrites.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace gtco::graph {
namespace {

/// Builds the replacement nodes of one node.
class Rewriter {
 public:
  Rewriter(Graph& graph, std::vector<Node>* out) : graph_(graph), out_(out) {}

  /// A node `op` reading `inputs` into a new activation of `shape` (or into `output` when
  /// given); returns the output's name.
  std::string Emit(const std::string& op, const std::string& base,
                   const std::vector<std::string>& inputs, const std::vector<int64_t>& shape,
                   const std::string& output = "") {
    Node node;
    node.op_type = op;
    node.name = graph_.FreshName(base);
    node.inputs = inputs;
    node.outputs = {output.empty() ? graph_.AddActivation(base, ElemType::kFloat32, shape)
                                   : output};
    out_->push_back(node);
    return node.outputs[0];
  }
  /// A Reshape of `x` to `shape`.
  std::string Reshape(const std::string& x, const std::string& base,
                      const std::vector<int64_t>& shape, const std::string& output = "") {
    const std::string dims = graph_.AddIntConstant(base + "_shape", ElemType::kInt64,
                                                   {static_cast<int64_t>(shape.size())}, shape);
    return Emit("Reshape", base, {x, dims}, shape, output);
  }
  std::string Scalar(const std::string& base, double value) {
    return graph_.AddFloatConstant(base, ElemType::kFloat32, {}, {value});
  }
  Node& Last() { return out_->back(); }

 private:
  Graph& graph_;
  std::vector<Node>* out_;
};

/// Sets `node`'s ints attribute `name` to `values`.
void SetInts(Node& node, const char* name, std::vector<int64_t> values) {
  Attribute attr;
  attr.kind = Attribute::Kind::kInts;
  attr.ints = std::move(values);
  node.attributes[name] = std::move(attr);
}

const Tensor* StaticF32(const Graph& graph, const std::string& name) {
  const Tensor* tensor = graph.FindTensor(name);
  if (tensor == nullptr || !tensor->has_shape || tensor->type != ElemType::kFloat32) return nullptr;
  return tensor;
}

/// A Conv's image, weights and output when all are static f32 tensors of `rank` dims and the
/// weights a constant with their values (explicit pads: no auto_pad but NOTSET).
struct ConvTensors {
  const Tensor *x = nullptr, *w = nullptr, *y = nullptr;
};
std::optional<ConvTensors> ConstantWeightConv(const Node& node, const Graph& graph, size_t rank) {
  if (node.op_type != "Conv" || node.inputs.size() < 2 || node.outputs.empty()) {
    return std::nullopt;
  }
  if (node.HasAttr("auto_pad") && node.attributes.at("auto_pad").s != "NOTSET") {
    return std::nullopt;
  }
  ConvTensors t{StaticF32(graph, node.inputs[0]), StaticF32(graph, node.inputs[1]),
                StaticF32(graph, node.outputs[0])};
  if (t.x == nullptr || t.w == nullptr || t.y == nullptr || !t.w->is_constant ||
      t.x->shape.size() != rank || t.w->shape.size() != rank || t.y->shape.size() != rank ||
      static_cast<int64_t>(t.w->float_data.size()) != t.w->NumElements()) {
    return std::nullopt;
  }
  return t;
}

bool HardActivation(const Node& node, Graph& graph, std::vector<Node>* out) {
  if (node.op_type != "HardSigmoid" && node.op_type != "HardSwish") return false;
  const Tensor* x = StaticF32(graph, node.inputs.at(0));
  if (x == nullptr || node.outputs.empty()) return false;
  const bool swish = node.op_type == "HardSwish";
  const double alpha = swish ? 1.0 / 6.0 : node.FloatAttr("alpha", 0.2f);
  const double beta = swish ? 0.5 : node.FloatAttr("beta", 0.5f);
  Rewriter r(graph, out);
  const std::string& in = node.inputs[0];
  const std::string base = node.name;
  std::string v = r.Emit("Mul", base + "_scaled", {in, r.Scalar(base + "_alpha", alpha)}, x->shape);
  v = r.Emit("Add", base + "_shifted", {v, r.Scalar(base + "_beta", beta)}, x->shape);
  v = r.Emit("Max", base + "_floor", {v, r.Scalar(base + "_zero", 0.0)}, x->shape);
  if (swish) {
    v = r.Emit("Min", base + "_gate", {v, r.Scalar(base + "_one", 1.0)}, x->shape);
    r.Emit("Mul", base, {in, v}, x->shape, node.outputs[0]);
  } else {
    r.Emit("Min", base, {v, r.Scalar(base + "_one", 1.0)}, x->shape, node.outputs[0]);
  }
  return true;
}

/// The constant axes of a reduction (attribute, or input 1 from opset 18), normalized and
/// sorted; false when they are not constant or the node reduces nothing or everything by
/// default.
bool ReduceAxes(const Node& node, const Graph& graph, int64_t rank, std::vector<int64_t>* axes) {
  axes->clear();
  if (node.HasAttr("axes")) {
    *axes = node.IntsAttr("axes");
  } else if (node.inputs.size() > 1 && !node.inputs[1].empty()) {
    const Tensor& tensor = graph.tensor(node.inputs[1]);
    if (!tensor.is_constant) return false;
    for (int64_t i = 0; i < tensor.NumElements(); ++i) axes->push_back(tensor.ValueAsInt(i));
  }
  if (axes->empty()) {
    if (node.IntAttr("noop_with_empty_axes", 0) != 0) return false;
    for (int64_t d = 0; d < rank; ++d) axes->push_back(d);
  }
  for (int64_t& axis : *axes) {
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return false;
  }
  std::sort(axes->begin(), axes->end());
  axes->erase(std::unique(axes->begin(), axes->end()), axes->end());
  return true;
}

bool ReductionAsRows(const Node& node, Graph& graph, std::vector<Node>* out) {
  if (node.op_type != "ReduceMean" && node.op_type != "ReduceSum") return false;
  const Tensor* x = StaticF32(graph, node.inputs.at(0));
  const Tensor* y = node.outputs.empty() ? nullptr : StaticF32(graph, node.outputs[0]);
  if (x == nullptr || y == nullptr || x->shape.empty()) return false;
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  std::vector<int64_t> axes;
  if (!ReduceAxes(node, graph, rank, &axes)) return false;
  // A trailing block (axes = [rank - count, rank)) reduces rows as it lies; other axes are moved
  // behind the kept ones first (BEiT's mean over the patch tokens, axis 1 of [1, 196, 384]).
  bool trailing = true;
  for (size_t i = 0; i < axes.size(); ++i) {
    trailing =
        trailing && axes[i] == rank - static_cast<int64_t>(axes.size()) + static_cast<int64_t>(i);
  }
  const bool keepdims = node.IntAttr("keepdims", 1) != 0;
  if (trailing && node.op_type == "ReduceMean" && axes.size() == 1 && keepdims) {
    return false;  // an anchor
  }
  std::vector<int64_t> perm, outer;
  int64_t block = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::binary_search(axes.begin(), axes.end(), d)) continue;
    perm.push_back(d);
    outer.push_back(x->shape[d]);
  }
  for (int64_t axis : axes) {
    perm.push_back(axis);
    block *= x->shape[axis];
  }
  if (block == 0) return false;
  Rewriter r(graph, out);
  std::vector<int64_t> rows = outer;
  rows.push_back(block);
  std::vector<int64_t> reduced = outer;
  reduced.push_back(1);
  std::string v = node.inputs[0];
  if (!trailing) {
    std::vector<int64_t> moved;
    for (int64_t d : perm) moved.push_back(x->shape[d]);
    v = r.Emit("Transpose", node.name + "_axes_last", {v}, moved);
    SetInts(r.Last(), "perm", perm);
  }
  v = r.Reshape(v, node.name + "_rows", rows);
  std::vector<std::string> mean_inputs = {v};
  if (graph.opset >= 18) {  // axes as an input
    mean_inputs.push_back(graph.AddIntConstant(node.name + "_last", ElemType::kInt64, {1}, {-1}));
  }
  v = r.Emit("ReduceMean", node.name + "_mean", mean_inputs, reduced);
  if (graph.opset < 18) {
    Attribute axes_attr;
    axes_attr.kind = Attribute::Kind::kInts;
    axes_attr.ints = {-1};
    r.Last().attributes["axes"] = axes_attr;
  }
  if (node.op_type == "ReduceSum") {
    v = r.Emit("Mul", node.name + "_sum", {v, r.Scalar(node.name + "_count", block)}, reduced);
  }
  r.Reshape(v, node.name, y->shape, node.outputs[0]);
  return true;
}

bool InstanceNorm(const Node& node, Graph& graph, std::vector<Node>* out) {
  if (node.op_type != "InstanceNormalization" || node.inputs.size() < 3) return false;
  const Tensor* x = StaticF32(graph, node.inputs[0]);
  const Tensor* scale = StaticF32(graph, node.inputs[1]);
  const Tensor* bias = StaticF32(graph, node.inputs[2]);
  if (x == nullptr || scale == nullptr || bias == nullptr || x->shape.size() < 3 ||
      !scale->is_constant || !bias->is_constant || node.outputs.empty()) {
    return false;
  }
  const int64_t n = x->shape[0], c = x->shape[1];
  int64_t s = 1;
  for (size_t d = 2; d < x->shape.size(); ++d) s *= x->shape[d];
  if (scale->NumElements() != c || bias->NumElements() != c || s == 0) return false;
  Rewriter r(graph, out);
  const std::string base = node.name;
  std::string v = r.Reshape(node.inputs[0], base + "_rows", {n, c, s});
  const std::string ones = graph.AddFloatConstant(base + "_unit_scale", ElemType::kFloat32, {s},
                                                  std::vector<double>(s, 1.0));
  const std::string zeros = graph.AddFloatConstant(base + "_zero_bias", ElemType::kFloat32, {s},
                                                   std::vector<double>(s, 0.0));
  v = r.Emit("LayerNormalization", base + "_normalized", {v, ones, zeros}, {n, c, s});
  Attribute axis;
  axis.kind = Attribute::Kind::kInt;
  axis.i = -1;
  Attribute epsilon;
  epsilon.kind = Attribute::Kind::kFloat;
  epsilon.f = node.FloatAttr("epsilon", 1e-5f);
  r.Last().attributes["axis"] = axis;
  r.Last().attributes["epsilon"] = epsilon;
  v = r.Reshape(v, base + "_image", x->shape);
  std::vector<int64_t> per_channel(x->shape.size() - 1, 1);
  per_channel[0] = c;
  std::vector<double> scale_values(c), bias_values(c);
  for (int64_t i = 0; i < c; ++i) {
    scale_values[i] = scale->ValueAsDouble(i);
    bias_values[i] = bias->ValueAsDouble(i);
  }
  const std::string scale_c =
      graph.AddFloatConstant(base + "_scale", ElemType::kFloat32, per_channel, scale_values);
  const std::string bias_c =
      graph.AddFloatConstant(base + "_bias", ElemType::kFloat32, per_channel, bias_values);
  v = r.Emit("Mul", base + "_scaled", {v, scale_c}, x->shape);
  r.Emit("Add", base, {v, bias_c}, x->shape, node.outputs[0]);
  return true;
}

bool Conv1d(const Node& node, Graph& graph, std::vector<Node>* out) {
  if (node.op_type != "Conv" || node.inputs.size() < 2) return false;
  const Tensor* x = StaticF32(graph, node.inputs[0]);
  const Tensor* w = StaticF32(graph, node.inputs[1]);
  const Tensor* y = node.outputs.empty() ? nullptr : StaticF32(graph, node.outputs[0]);
  if (x == nullptr || w == nullptr || y == nullptr || x->shape.size() != 3 ||
      w->shape.size() != 3 || y->shape.size() != 3 || !w->is_constant) {
    return false;
  }
  if (node.HasAttr("auto_pad") && node.attributes.at("auto_pad").s != "NOTSET") return false;
  Rewriter r(graph, out);
  const std::string base = node.name;
  const std::string image =
      r.Reshape(node.inputs[0], base + "_image", {x->shape[0], x->shape[1], 1, x->shape[2]});
  Tensor weight = *w;
  weight.name = graph.FreshName(w->name + "_2d");
  weight.shape = {w->shape[0], w->shape[1], 1, w->shape[2]};
  const std::string weight_name = weight.name;
  graph.SetTensor(std::move(weight));
  Node conv = node;
  conv.name = graph.FreshName(base + "_2d");
  conv.inputs[0] = image;
  conv.inputs[1] = weight_name;
  const std::vector<int64_t> kernel = node.IntsAttr("kernel_shape");
  SetInts(conv, "kernel_shape", {1, kernel.empty() ? w->shape[2] : kernel[0]});
  const std::vector<int64_t> strides = node.IntsAttr("strides");
  SetInts(conv, "strides", {1, strides.empty() ? 1 : strides[0]});
  const std::vector<int64_t> dilations = node.IntsAttr("dilations");
  SetInts(conv, "dilations", {1, dilations.empty() ? 1 : dilations[0]});
  const std::vector<int64_t> pads = node.IntsAttr("pads");
  SetInts(conv, "pads", {0, pads.size() == 2 ? pads[0] : 0, 0, pads.size() == 2 ? pads[1] : 0});
  const std::vector<int64_t> image_out = {y->shape[0], y->shape[1], 1, y->shape[2]};
  conv.outputs = {graph.AddActivation(base + "_2d", ElemType::kFloat32, image_out)};
  out->push_back(conv);
  r.Reshape(conv.outputs[0], base, y->shape, node.outputs[0]);
  return true;
}

/// `node` as an Identity of its first input into its first output (true, for the rewrites).
bool ReplaceByIdentity(const Node& node, std::vector<Node>* out) {
  Node identity;
  identity.op_type = "Identity";
  identity.name = node.name;
  identity.inputs = {node.inputs[0]};
  identity.outputs = {node.outputs[0]};
  out->push_back(std::move(identity));
  return true;
}

/// Dropout in inference mode (no training_mode input, or a constant false one) or of a constant
/// ratio 0, whose mask nobody reads -> Identity.
bool InferenceDropout(const Node& node, Graph& graph, std::vector<Node>* out) {
  if (node.op_type != "Dropout" || node.outputs.empty() || node.inputs.empty()) return false;
  if (node.outputs.size() > 1 && !node.outputs[1].empty()) {
    const auto readers = graph.ConsumerMap();
    const bool output = std::find(graph.outputs.begin(), graph.outputs.end(), node.outputs[1]) !=
                        graph.outputs.end();
    if (readers.count(node.outputs[1]) || output) return false;
  }
  // A constant ratio of 0 drops nothing even in training mode (Swin-T exports its 24 Dropouts
  // so: training_mode true, ratio 0).
  bool drops_nothing = false;
  if (node.inputs.size() > 1 && !node.inputs[1].empty()) {
    const Tensor* ratio = graph.FindTensor(node.inputs[1]);
    drops_nothing = ratio != nullptr && ratio->is_constant && ratio->NumElements() == 1 &&
                    ratio->ValueAsDouble(0) == 0.0;
  }
  if (!drops_nothing && node.inputs.size() > 2 && !node.inputs[2].empty()) {
    const Tensor& training = graph.tensor(node.inputs[2]);
    if (!training.is_constant || training.NumElements() != 1 || training.ValueAsInt(0) != 0) {
      return false;
    }
  }
  return ReplaceByIdentity(node, out);
}

/// The kernel positions [first, last] along one spatial axis that read inside the image for
/// some output position (first > last when none does).
std::pair<int64_t, int64_t> LiveTaps(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                                     int64_t pad_begin, int64_t dilation) {
  int64_t first = kernel, last = -1;
  for (int64_t r = 0; r < kernel; ++r) {
    // Output position o reads o * stride - pad_begin + r * dilation: inside [0, in) for some o
    // in [0, out) when the range of those reads meets [0, in).
    const int64_t lowest = -pad_begin + r * dilation;
    const int64_t highest = (out - 1) * stride - pad_begin + r * dilation;
    bool live = highest >= 0 && lowest < in;
    if (live && stride > 1) {  // the reads step by stride: one of them must land inside
      live = false;
      for (int64_t o = 0; o < out && !live; ++o) {
        const int64_t at = o * stride - pad_begin + r * dilation;
        live = at >= 0 && at < in;
      }
    }
    if (live) {
      first = std::min(first, r);
      last = r;
    }
  }
  return {first, last};
}

/// A 2-D Conv whose kernel rows or columns at its edges never read inside the image (only
/// padding, for every output position) loses them: the weights are sliced to the live taps and
/// the pads shrink by what the dropped taps spanned, so every output reads the same values.
/// DeepLabV3's atrous 3x3s of dilation 24 and 36 on a 14x14 map are 1x1 convs (9x fewer FLOPs).
bool TrimDeadConvTaps(const Node& node, Graph& graph, std::vector<Node>* out) {
  const std::optional<ConvTensors> conv_tensors = ConstantWeightConv(node, graph, 4);
  if (!conv_tensors) return false;
  const auto [x, w, y] = *conv_tensors;
  std::vector<int64_t> pads = node.IntsAttr("pads");
  std::vector<int64_t> strides = node.IntsAttr("strides");
  std::vector<int64_t> dilations = node.IntsAttr("dilations");
  if (pads.empty()) pads.assign(4, 0);
  if (strides.empty()) strides.assign(2, 1);
  if (dilations.empty()) dilations.assign(2, 1);
  if (pads.size() != 4 || strides.size() != 2 || dilations.size() != 2) return false;
  const int64_t kh = w->shape[2], kw = w->shape[3];
  const auto [r0, r1] = LiveTaps(x->shape[2], y->shape[2], kh, strides[0], pads[0], dilations[0]);
  const auto [s0, s1] = LiveTaps(x->shape[3], y->shape[3], kw, strides[1], pads[1], dilations[1]);
  if (r0 > r1 || s0 > s1 || (r0 == 0 && r1 == kh - 1 && s0 == 0 && s1 == kw - 1)) return false;
  std::vector<int64_t> trimmed = {pads[0] - r0 * dilations[0], pads[1] - s0 * dilations[1],
                                  pads[2] - (kh - 1 - r1) * dilations[0],
                                  pads[3] - (kw - 1 - s1) * dilations[1]};
  if (std::any_of(trimmed.begin(), trimmed.end(), [](int64_t pad) { return pad < 0; })) {
    return false;
  }
  Tensor weight = *w;
  weight.name = graph.FreshName(w->name + "_live_taps");
  weight.shape = {w->shape[0], w->shape[1], r1 - r0 + 1, s1 - s0 + 1};
  weight.float_data.clear();
  for (int64_t plane = 0; plane < w->shape[0] * w->shape[1]; ++plane) {
    for (int64_t r = r0; r <= r1; ++r) {
      for (int64_t s = s0; s <= s1; ++s) {
        weight.float_data.push_back(w->float_data[(plane * kh + r) * kw + s]);
      }
    }
  }
  Node conv = node;
  conv.inputs[1] = weight.name;
  graph.SetTensor(std::move(weight));
  SetInts(conv, "kernel_shape", {r1 - r0 + 1, s1 - s0 + 1});
  SetInts(conv, "pads", trimmed);
  out->push_back(std::move(conv));
  return true;
}

/// A 3x3 Conv of stride 1, one group and "same" padding (pads = dilation) whose dilation leaves
/// its off-centre taps inside the image for at most a quarter of the rows and of the columns
/// (DeepLabV3's atrous 3x3 of dilation 12 on a 14x14 map: its off-centre taps read the image for
/// 2 of 14 rows or columns, 324 of 1764 pixel-taps) runs as the sum of the convs that reach the
/// image: the centre tap as a 1x1 conv over every pixel (with the bias), the centre row's left
/// and right taps as 1x1 convs over the columns they reach, and the top and bottom rows as 1x3
/// convs over the rows they reach; each partial result is placed by a Concat with zeros. Every
/// output is the same sum of the same products, in another order.
bool SplitSparseDilatedConv(const Node& node, Graph& graph, std::vector<Node>* out) {
  const std::optional<ConvTensors> conv_tensors = ConstantWeightConv(node, graph, 4);
  if (!conv_tensors) return false;
  // Named pointers, not a structured binding: the lambdas below capture them.
  const Tensor *x = conv_tensors->x, *w = conv_tensors->w, *y = conv_tensors->y;
  if (y->shape != std::vector<int64_t>{x->shape[0], w->shape[0], x->shape[2], x->shape[3]} ||
      w->shape[2] != 3 || w->shape[3] != 3 || w->shape[1] != x->shape[1] ||
      node.IntAttr("group", 1) != 1) {
    return false;
  }
  const std::vector<int64_t> pads = node.IntsAttr("pads");
  const std::vector<int64_t> strides = node.IntsAttr("strides");
  const std::vector<int64_t> dilations = node.IntsAttr("dilations");
  if (dilations.size() != 2 || pads.size() != 4 ||
      (!strides.empty() && strides != std::vector<int64_t>{1, 1})) {
    return false;
  }
  const int64_t h = x->shape[2], wd = x->shape[3], dh = dilations[0], dw = dilations[1];
  if (pads != std::vector<int64_t>{dh, dw, dh, dw} || dh >= h || dw >= wd || 4 * (h - dh) > h ||
      4 * (wd - dw) > wd) {
    return false;
  }
  const int64_t n = x->shape[0], c = x->shape[1], k = w->shape[0];
  Rewriter r(graph, out);
  const std::string base = node.name;
  // The weights of taps [r0, r1] x [s0, s1] as a constant [K, C, rows, cols].
  auto taps = [&](int64_t r0, int64_t r1, int64_t s0, int64_t s1, const std::string& suffix) {
    std::vector<double> values;
    for (int64_t plane = 0; plane < k * c; ++plane) {
      for (int64_t row = r0; row <= r1; ++row) {
        for (int64_t col = s0; col <= s1; ++col) {
          values.push_back(w->float_data[(plane * 3 + row) * 3 + col]);
        }
      }
    }
    return graph.AddFloatConstant(w->name + suffix, ElemType::kFloat32,
                                  {k, c, r1 - r0 + 1, s1 - s0 + 1}, std::move(values));
  };
  // A Conv of `input` with `weight` (kernel rows x cols) into `shape`, no bias unless given.
  auto conv = [&](const std::string& input, const std::string& weight, int64_t rows, int64_t cols,
                  std::vector<int64_t> conv_pads, std::vector<int64_t> shape,
                  const std::string& suffix, const std::string& bias) {
    std::vector<std::string> inputs = {input, weight};
    if (!bias.empty()) inputs.push_back(bias);
    const std::string result = r.Emit("Conv", base + suffix, inputs, shape);
    Node& emitted = r.Last();
    SetInts(emitted, "kernel_shape", {rows, cols});
    SetInts(emitted, "pads", std::move(conv_pads));
    SetInts(emitted, "dilations", {dh, dw});
    return result;
  };
  // x[..., begin:end] along `axis` (2: rows, 3: columns).
  auto slice = [&](int64_t axis, int64_t begin, int64_t end, const std::string& suffix) {
    std::vector<int64_t> shape = x->shape;
    shape[axis] = end - begin;
    const std::string starts =
        graph.AddIntConstant(base + suffix + "_starts", ElemType::kInt64, {1}, {begin});
    const std::string ends =
        graph.AddIntConstant(base + suffix + "_ends", ElemType::kInt64, {1}, {end});
    const std::string axes =
        graph.AddIntConstant(base + suffix + "_axes", ElemType::kInt64, {1}, {axis});
    return r.Emit("Slice", base + suffix, {node.inputs[0], starts, ends, axes}, shape);
  };
  // `partial` (the output's shape but `extent` along `axis`) placed at the start (zeros after)
  // or at the end (zeros before) of the output along `axis`.
  auto place = [&](const std::string& partial, int64_t axis, int64_t extent, bool at_start,
                   const std::string& suffix) {
    std::vector<int64_t> zero_shape = y->shape;
    zero_shape[axis] -= extent;
    const std::string zeros =
        graph.AddFloatConstant(base + suffix + "_zeros", ElemType::kFloat32, zero_shape,
                               std::vector<double>(n * k * zero_shape[2] * zero_shape[3], 0.0));
    const std::string placed = r.Emit("Concat", base + suffix + "_placed",
                                      at_start ? std::vector<std::string>{partial, zeros}
                                               : std::vector<std::string>{zeros, partial},
                                      y->shape);
    Node& concat = r.Last();
    Attribute attr;
    attr.kind = Attribute::Kind::kInt;
    attr.i = axis;
    concat.attributes["axis"] = attr;
    return placed;
  };
  const std::string bias = node.inputs.size() > 2 ? node.inputs[2] : "";
  std::string sum = conv(node.inputs[0], taps(1, 1, 1, 1, "_centre"), 1, 1, {0, 0, 0, 0}, y->shape,
                         "_centre", bias);
  const int64_t live_rows = h - dh, live_cols = wd - dw;
  std::vector<std::string> parts;
  // The centre row's left tap: output columns [dw, W) read input columns [0, W - dw).
  parts.push_back(place(conv(slice(3, 0, live_cols, "_left_in"), taps(1, 1, 0, 0, "_left"), 1, 1,
                             {0, 0, 0, 0}, {n, k, h, live_cols}, "_left", ""),
                        3, live_cols, false, "_left"));
  parts.push_back(place(conv(slice(3, dw, wd, "_right_in"), taps(1, 1, 2, 2, "_right"), 1, 1,
                             {0, 0, 0, 0}, {n, k, h, live_cols}, "_right", ""),
                        3, live_cols, true, "_right"));
  // The top row: output rows [dh, H) read input rows [0, H - dh); the bottom row the reverse.
  parts.push_back(place(conv(slice(2, 0, live_rows, "_top_in"), taps(0, 0, 0, 2, "_top"), 1, 3,
                             {0, dw, 0, dw}, {n, k, live_rows, wd}, "_top", ""),
                        2, live_rows, false, "_top"));
  parts.push_back(place(conv(slice(2, dh, h, "_bottom_in"), taps(2, 2, 0, 2, "_bottom"), 1, 3,
                             {0, dw, 0, dw}, {n, k, live_rows, wd}, "_bottom", ""),
                        2, live_rows, true, "_bottom"));
  for (size_t i = 0; i < parts.size(); ++i) {
    sum = r.Emit("Add", base + "_sum", {sum, parts[i]}, y->shape,
                 i + 1 == parts.size() ? node.outputs[0] : "");
  }
  return true;
}

/// A Pad's amounts: its "pads" attribute (opset < 11) or its constant input 1; false when that
/// input is not a constant.
bool ConstantPadAmounts(const Node& pad, const Graph& graph, std::vector<int64_t>* amounts) {
  *amounts = pad.IntsAttr("pads");
  if (pad.inputs.size() < 2 || pad.inputs[1].empty()) return true;
  const Tensor* tensor = graph.FindTensor(pad.inputs[1]);
  if (tensor == nullptr || !tensor->is_constant) return false;
  amounts->clear();
  for (int64_t i = 0; i < tensor->NumElements(); ++i) amounts->push_back(tensor->ValueAsInt(i));
  return true;
}

/// A Pad of constant all-zero amounts (DenseNet's transitions export one before each average
/// pool) -> Identity.
bool NoOpPad(const Node& node, Graph& graph, std::vector<Node>* out) {
  if (node.op_type != "Pad" || node.inputs.empty() || node.outputs.empty()) return false;
  std::vector<int64_t> amounts;
  if (!ConstantPadAmounts(node, graph, &amounts)) return false;
  if (amounts.empty() ||
      std::any_of(amounts.begin(), amounts.end(), [](int64_t a) { return a != 0; })) {
    return false;
  }
  return ReplaceByIdentity(node, out);
}

/// Index of the only node reading `tensor`, -1 when none or several do (or it is an output).
int OnlyReader(const Graph& graph, const std::map<std::string, std::vector<int>>& readers,
               const std::string& tensor) {
  if (std::find(graph.outputs.begin(), graph.outputs.end(), tensor) != graph.outputs.end()) {
    return -1;
  }
  auto found = readers.find(tensor);
  if (found == readers.end() || found->second.size() != 1) return -1;
  return found->second[0];
}

/// Zero constant Pads of H and W folded into the Conv that alone reads them.
void FoldPadsIntoConvs(Graph& graph) {
  const std::map<std::string, std::vector<int>> readers = graph.ConsumerMap();
  std::vector<bool> drop(graph.nodes.size(), false);
  for (size_t index = 0; index < graph.nodes.size(); ++index) {
    const Node& pad = graph.nodes[index];
    if (pad.op_type != "Pad" || !pad.domain.empty() || pad.outputs.empty()) continue;
    const std::string mode = pad.HasAttr("mode") ? pad.attributes.at("mode").s : "constant";
    const Tensor* x = StaticF32(graph, pad.inputs.at(0));
    if (mode != "constant" || x == nullptr || x->shape.size() != 4) continue;
    std::vector<int64_t> amounts;
    if (!ConstantPadAmounts(pad, graph, &amounts)) continue;
    if (pad.inputs.size() > 2 && !pad.inputs[2].empty()) {
      const Tensor& value = graph.tensor(pad.inputs[2]);
      if (!value.is_constant || value.NumElements() != 1 || value.ValueAsDouble(0) != 0.0) continue;
    }
    if (pad.inputs.size() > 3 && !pad.inputs[3].empty()) continue;  // axes (opset 18)
    if (amounts.size() != 8 || amounts[0] || amounts[1] || amounts[4] || amounts[5]) continue;
    if (std::any_of(amounts.begin(), amounts.end(), [](int64_t a) { return a < 0; })) continue;
    const int reader = OnlyReader(graph, readers, pad.outputs[0]);
    if (reader < 0) continue;
    Node& conv = graph.nodes[reader];
    if (conv.op_type != "Conv" || conv.inputs.at(0) != pad.outputs[0]) continue;
    if (conv.HasAttr("auto_pad") && conv.attributes.at("auto_pad").s != "NOTSET") continue;
    std::vector<int64_t> pads = conv.IntsAttr("pads");
    if (pads.empty()) pads.assign(4, 0);
    if (pads.size() != 4) continue;
    pads[0] += amounts[2];  // top
    pads[1] += amounts[3];  // left
    pads[2] += amounts[6];  // bottom
    pads[3] += amounts[7];  // right
    Attribute attr;
    attr.kind = Attribute::Kind::kInts;
    attr.ints = pads;
    conv.attributes["pads"] = attr;
    conv.inputs[0] = pad.inputs[0];
    drop[index] = true;
  }
  std::vector<Node> kept;
  for (size_t index = 0; index < graph.nodes.size(); ++index) {
    if (!drop[index]) kept.push_back(std::move(graph.nodes[index]));
  }
  graph.nodes = std::move(kept);
}

}  // namespace

absl::Status RewriteForKernels(Graph& graph) {
  FoldPadsIntoConvs(graph);
  std::vector<Node> rewritten;
  rewritten.reserve(graph.nodes.size());
  for (const Node& node : graph.nodes) {
    if (!node.domain.empty() ||
        !(HardActivation(node, graph, &rewritten) || ReductionAsRows(node, graph, &rewritten) ||
          InstanceNorm(node, graph, &rewritten) || Conv1d(node, graph, &rewritten) ||
          InferenceDropout(node, graph, &rewritten) || NoOpPad(node, graph, &rewritten) ||
          TrimDeadConvTaps(node, graph, &rewritten) ||
          SplitSparseDilatedConv(node, graph, &rewritten))) {
      rewritten.push_back(node);
    }
  }
  graph.nodes = std::move(rewritten);
  return absl::OkStatus();
}

}  // namespace gtco::graph
