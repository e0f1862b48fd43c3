// Anchor lowering: canonical shapes and params for MatMul (f32, bf16), MatMulInteger, Gemm,
// Softmax, LayerNorm, ReduceMean, Conv and GlobalAveragePool.
#include "common/graph/anchor_lowering.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/graph/bf16x3_split.h"
#include "common/graph/const_eval.h"
#include "common/graph/op_support.h"
#include "common/ir/conv.h"
#include "common/ir/pool.h"
#include "common/util/status.h"

namespace gtco::graph {
namespace {

using Shape = std::vector<int64_t>;

ir::TensorDesc Desc(Shape shape, ir::DType dtype = ir::DType::kF32) {
  ir::TensorDesc desc;
  desc.dtype = dtype;
  desc.shape = std::move(shape);
  return desc;
}

/// The workload dtype of a matmul operand's graph element type (checked by CheckSupportedOps).
ir::DType MatMulDType(ElemType type) {
  switch (type) {
    case ElemType::kBFloat16:
      return ir::DType::kBF16;
    case ElemType::kFloat16:
      return ir::DType::kF16;
    case ElemType::kUInt8:
      return ir::DType::kU8;
    case ElemType::kInt8:
      return ir::DType::kI8;
    case ElemType::kInt32:
      return ir::DType::kI32;
    default:
      return ir::DType::kF32;
  }
}

absl::Status AnchorUnimplemented(const Node& node, const std::string& why) {
  return absl::UnimplementedError(
      absl::StrCat("ONNX op '", node.op_type, "' at node '", node.name, "': ", why));
}

absl::Status AnchorInvalid(const Node& node, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat("ONNX op '", node.op_type, "' at node '", node.name, "': ", why));
}

AnchorHead NewHead(const Node& node, const Graph& graph, ir::AnchorKind kind) {
  AnchorHead head;
  head.workload.anchor = kind;
  head.onnx_output = node.outputs.at(0);
  head.onnx_shape = graph.tensor(head.onnx_output).shape;
  head.result.kind = ir::Operand::Kind::kAcc;
  return head;
}

ir::Operand Const(float value) {
  ir::Operand operand;
  operand.kind = ir::Operand::Kind::kConst;
  operand.value = value;
  return operand;
}

ir::Operand OperandOf(ir::Operand::Kind kind, int index) {
  ir::Operand operand;
  operand.kind = kind;
  operand.index = index;
  return operand;
}

/// Appends `op(args)` to the head's epilogue and returns the operand of its value.
ir::Operand Emit(AnchorHead& head, ir::EwOp op, std::vector<ir::Operand> args) {
  head.workload.epilogue.push_back(ir::EwInstr{op, std::move(args)});
  return OperandOf(ir::Operand::Kind::kValue, static_cast<int>(head.workload.epilogue.size()) - 1);
}

/// Whether one side of a batched matmul carries the batch (true) or is broadcast (false).
absl::StatusOr<bool> BatchedFlag(const Node& node, const Shape& side, const Shape& batch) {
  if (NumElements(side) == 1) return false;
  Shape padded(batch.size() - side.size(), 1);
  padded.insert(padded.end(), side.begin(), side.end());
  if (padded == batch) return true;
  return AnchorUnimplemented(
      node, absl::StrCat("batch dims ", ShapeString(side), " are partially broadcast to ",
                         ShapeString(batch)));
}

absl::StatusOr<AnchorHead> LowerMatMul(const Node& node, const Graph& graph) {
  Shape a = graph.tensor(node.inputs.at(0)).shape;
  Shape b = graph.tensor(node.inputs.at(1)).shape;
  if (a.empty() || b.empty()) return AnchorInvalid(node, "scalar operand");
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  if (b[b.size() - 2] != k) {
    return AnchorInvalid(node, absl::StrCat("inner dimensions differ: A is ", ShapeString(a),
                                            ", B is ", ShapeString(b)));
  }
  AnchorHead head = NewHead(node, graph, ir::AnchorKind::kMatMul);
  ir::MatMulParams& p = head.workload.matmul;
  p.k = k;
  p.n = n;
  if (NumElements(b_batch) == 1) {  // B is shared: fold A's batch dims into M
    p.batch = 1;
    p.m = NumElements(a_batch) * m;
  } else {
    GTCO_ASSIGN_OR_RETURN(Shape batch, BroadcastShapes(a_batch, b_batch));
    p.batch = NumElements(batch);
    p.m = m;
    GTCO_ASSIGN_OR_RETURN(p.a_batched, BatchedFlag(node, a_batch, batch));
    GTCO_ASSIGN_OR_RETURN(p.b_batched, BatchedFlag(node, b_batch, batch));
  }
  head.workload.inputs = {
      Desc({p.a_batched ? p.batch : 1, p.m, k}, MatMulDType(graph.tensor(node.inputs[0]).type)),
      Desc({p.b_batched ? p.batch : 1, k, n}, MatMulDType(graph.tensor(node.inputs[1]).type))};
  head.workload.num_anchor_inputs = 2;
  head.workload.output =
      Desc({p.batch, p.m, n}, MatMulDType(graph.tensor(node.outputs.at(0)).type));
  if (node.op_type == "MatMulInteger") {
    // Per-tensor zero points (inputs 2 and 3, optional); CheckSupportedOps made B's constant.
    // A's, when computed at run time (DynamicQuantizeLinear), is the anchor's third input.
    for (size_t i = 2; i < 4; ++i) {
      if (node.inputs.size() <= i || node.inputs[i].empty()) continue;
      const Tensor& zero_point = graph.tensor(node.inputs[i]);
      if (!IsUniformZeroPoint(zero_point) || (!zero_point.is_constant && i != 2)) {
        return AnchorUnimplemented(
            node, "zero points must be per-tensor scalars, B's constant");
      }
      if (!zero_point.is_constant) {
        p.a_zero_point_input = true;
        head.workload.inputs.push_back(Desc({1}, MatMulDType(zero_point.type)));
        head.workload.num_anchor_inputs = 3;
        continue;
      }
      (i == 2 ? p.a_zero_point : p.b_zero_point) = static_cast<int32_t>(zero_point.ValueAsInt(0));
    }
  }
  return head;
}

absl::StatusOr<AnchorHead> LowerGemm(const Node& node, const Graph& graph) {
  Shape a = graph.tensor(node.inputs.at(0)).shape;
  Shape b = graph.tensor(node.inputs.at(1)).shape;
  if (a.size() != 2 || b.size() != 2) return AnchorInvalid(node, "Gemm operands must be 2-D");
  AnchorHead head = NewHead(node, graph, ir::AnchorKind::kMatMul);
  ir::MatMulParams& p = head.workload.matmul;
  p.trans_a = node.IntAttr("transA", 0) != 0;
  p.trans_b = node.IntAttr("transB", 0) != 0;
  p.m = p.trans_a ? a[1] : a[0];
  p.k = p.trans_a ? a[0] : a[1];
  p.n = p.trans_b ? b[0] : b[1];
  if ((p.trans_b ? b[1] : b[0]) != p.k) {
    return AnchorInvalid(node, absl::StrCat("inner dimensions differ: A is ", ShapeString(a),
                                            ", B is ", ShapeString(b)));
  }
  head.workload.inputs = {Desc({1, a[0], a[1]}), Desc({1, b[0], b[1]})};
  head.workload.num_anchor_inputs = 2;
  head.workload.output = Desc({1, p.m, p.n});
  float alpha = node.FloatAttr("alpha", 1.0f), beta = node.FloatAttr("beta", 1.0f);
  if (alpha != 1.0f) head.result = Emit(head, ir::EwOp::kMul, {head.result, Const(alpha)});
  if (node.inputs.size() < 3 || node.inputs[2].empty() || beta == 0.0f) return head;
  const Tensor& c = graph.tensor(node.inputs[2]);
  // C must broadcast (unidirectionally) to [M, N], as ONNX requires.
  bool broadcasts = c.shape.size() <= 2;
  for (size_t dim = 0; broadcasts && dim < c.shape.size(); ++dim) {
    const int64_t out_dim = dim + 2 - c.shape.size() == 0 ? p.m : p.n;
    broadcasts = c.shape[dim] == 1 || c.shape[dim] == out_dim;
  }
  if (!broadcasts) {
    return AnchorInvalid(node, absl::StrCat("bias C of shape ", ShapeString(c.shape),
                                            " does not broadcast to the output [", p.m, ",", p.n,
                                            "]"));
  }
  ir::Operand bias;
  if (c.is_constant && c.NumElements() == 1) {
    bias = Const(static_cast<float>(c.ValueAsDouble(0) * beta));
  } else {
    Shape shape = AnchorExtraShape(c.shape, {p.m, p.n}, head.workload.output.shape)
                      .value_or(StripLeadingOnes(c.shape));
    int index = static_cast<int>(head.workload.inputs.size());
    head.workload.inputs.push_back(Desc(shape));
    head.input_ids[c.name] = index;
    bias = OperandOf(ir::Operand::Kind::kInput, index);
    if (beta != 1.0f) bias = Emit(head, ir::EwOp::kMul, {bias, Const(beta)});
  }
  head.result = Emit(head, ir::EwOp::kAdd, {head.result, bias});
  return head;
}

/// Rows/cols head for ops that work on the last axis; `axis` is the node's axis attribute.
absl::StatusOr<AnchorHead> LowerRowOp(const Node& node, const Graph& graph, ir::AnchorKind kind,
                                      int64_t axis) {
  const Shape& x = graph.tensor(node.inputs.at(0)).shape;
  int64_t rank = static_cast<int64_t>(x.size());
  if (rank == 0) return AnchorInvalid(node, "scalar input");
  if ((axis < 0 ? axis + rank : axis) != rank - 1) {
    return AnchorUnimplemented(node, absl::StrCat("axis ", axis, " of a rank-", rank,
                                                  " tensor; only the last axis is supported"));
  }
  AnchorHead head = NewHead(node, graph, kind);
  ir::RowParams& row = head.workload.row;
  row.cols = x.back();
  row.rows = NumElements(x) / row.cols;
  head.workload.inputs = {Desc({row.rows, row.cols})};
  head.workload.num_anchor_inputs = 1;
  head.workload.output = Desc({row.rows, kind == ir::AnchorKind::kReduceMean ? 1 : row.cols});
  return head;
}

bool IsUsed(const std::string& tensor, const Graph& graph) {
  if (tensor.empty()) return false;
  for (const std::string& output : graph.outputs) {
    if (output == tensor) return true;
  }
  for (const Node& node : graph.nodes) {
    for (const std::string& input : node.inputs) {
      if (input == tensor) return true;
    }
  }
  return false;
}

absl::StatusOr<AnchorHead> LowerLayerNorm(const Node& node, const Graph& graph) {
  for (size_t i = 1; i < node.outputs.size(); ++i) {
    if (IsUsed(node.outputs[i], graph)) {
      return AnchorUnimplemented(node, "the Mean/InvStdDev outputs are not supported");
    }
  }
  if (node.inputs.size() < 3 || node.inputs[2].empty()) {
    return AnchorUnimplemented(node, "LayerNormalization without a bias input is not supported");
  }
  GTCO_ASSIGN_OR_RETURN(AnchorHead head, LowerRowOp(node, graph, ir::AnchorKind::kLayerNorm,
                                                    node.IntAttr("axis", -1)));
  int64_t cols = head.workload.row.cols;
  for (size_t i = 1; i < 3; ++i) {
    if (graph.tensor(node.inputs[i]).NumElements() != cols) {
      return AnchorUnimplemented(node, "scale and bias must have one value per normalized column");
    }
    head.workload.inputs.push_back(Desc({cols}));
  }
  head.workload.num_anchor_inputs = 3;
  head.workload.row.epsilon = node.FloatAttr("epsilon", 1e-5f);
  return head;
}

absl::StatusOr<AnchorHead> LowerReduceMean(const Node& node, const Graph& graph) {
  std::vector<int64_t> axes = node.IntsAttr("axes");
  if (node.inputs.size() > 1 && !node.inputs[1].empty()) {
    const Tensor& axes_tensor = graph.tensor(node.inputs[1]);
    if (!axes_tensor.is_constant) return AnchorUnimplemented(node, "axes must be constant");
    axes = axes_tensor.int_data;
  }
  int64_t rank = static_cast<int64_t>(graph.tensor(node.inputs.at(0)).shape.size());
  if (axes.empty() && rank == 1) axes = {0};
  if (axes.size() != 1) {
    return AnchorUnimplemented(node, "only a reduction over the last axis is supported");
  }
  if (node.IntAttr("keepdims", 1) == 0) {
    return AnchorUnimplemented(node, "only keepdims=1 is supported");
  }
  return LowerRowOp(node, graph, ir::AnchorKind::kReduceMean, axes[0]);
}

/// Pads of one spatial dim under ONNX auto_pad SAME_UPPER / SAME_LOWER: the output is
/// ceil(size / stride) and the extra pad goes to the end (UPPER) or the beginning (LOWER).
std::pair<int64_t, int64_t> SamePads(int64_t size, int64_t kernel, int64_t stride,
                                     int64_t dilation, bool upper) {
  const int64_t out = (size + stride - 1) / stride;
  const int64_t total = std::max<int64_t>(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - size);
  const int64_t small = total / 2, large = total - small;
  return upper ? std::make_pair(small, large) : std::make_pair(large, small);
}

/// The 2-D window attributes Conv and the pools share.
struct Window {
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
};

/// strides, dilations and pads of `node` over an in_h x in_w image and a kernel_h x kernel_w
/// window: explicit pads, or auto_pad VALID / SAME_UPPER / SAME_LOWER.
absl::StatusOr<Window> WindowAttrs(const Node& node, int64_t in_h, int64_t in_w,
                                   int64_t kernel_h, int64_t kernel_w) {
  const Shape strides = node.IntsAttr("strides"), dilations = node.IntsAttr("dilations");
  const Shape pads = node.IntsAttr("pads");
  if ((!strides.empty() && strides.size() != 2) || (!dilations.empty() && dilations.size() != 2) ||
      (!pads.empty() && pads.size() != 4)) {
    return AnchorInvalid(node, "strides and dilations need 2 values, pads 4");
  }
  Window window;
  if (!strides.empty()) {
    window.stride_h = strides[0];
    window.stride_w = strides[1];
  }
  if (!dilations.empty()) {
    window.dilation_h = dilations[0];
    window.dilation_w = dilations[1];
  }
  const std::string auto_pad =
      node.HasAttr("auto_pad") ? node.attributes.at("auto_pad").s : std::string("NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const bool upper = auto_pad == "SAME_UPPER";
    std::tie(window.pad_top, window.pad_bottom) = SamePads(
        in_h, kernel_h, std::max<int64_t>(window.stride_h, 1), window.dilation_h, upper);
    std::tie(window.pad_left, window.pad_right) = SamePads(
        in_w, kernel_w, std::max<int64_t>(window.stride_w, 1), window.dilation_w, upper);
  } else if (auto_pad == "NOTSET" || auto_pad.empty()) {
    if (!pads.empty()) {
      window.pad_top = pads[0];
      window.pad_left = pads[1];
      window.pad_bottom = pads[2];
      window.pad_right = pads[3];
    }
  } else if (auto_pad != "VALID") {
    return AnchorInvalid(node, absl::StrCat("unknown auto_pad '", auto_pad, "'"));
  }
  return window;
}

/// Sets the window fields of `p` (ir::ConvParams or ir::PoolParams, which name them alike) from
/// `node`'s attributes over p's image and kernel sizes.
template <typename Params>
absl::Status SetWindow(const Node& node, Params& p) {
  GTCO_ASSIGN_OR_RETURN(const Window window,
                        WindowAttrs(node, p.in_h, p.in_w, p.kernel_h, p.kernel_w));
  p.stride_h = window.stride_h;
  p.stride_w = window.stride_w;
  p.dilation_h = window.dilation_h;
  p.dilation_w = window.dilation_w;
  p.pad_top = window.pad_top;
  p.pad_left = window.pad_left;
  p.pad_bottom = window.pad_bottom;
  p.pad_right = window.pad_right;
  return absl::OkStatus();
}

/// A 2-D Conv (X [N, C, H, W], W [K, C/group, R, S], optional bias B [K] as an epilogue add of a
/// [K, 1, 1] input).
absl::StatusOr<AnchorHead> LowerConv(const Node& node, const Graph& graph) {
  // A conv of a bf16x3 split in the pair layout convolves the image the split came from.
  const bool pairs = node.HasAttr(kPairImageAttr);
  const Shape x = pairs ? node.IntsAttr(kPairImageAttr) : graph.tensor(node.inputs.at(0)).shape;
  const Shape& w = graph.tensor(node.inputs.at(1)).shape;
  if (x.size() != 4 || w.size() != 4) {
    return AnchorUnimplemented(node, absl::StrCat("only 2-D convolutions (4-D X and W) are "
                                                  "supported; X is ",
                                                  ShapeString(x), ", W is ", ShapeString(w)));
  }
  ir::ConvParams p;
  p.batch = x[0];
  p.in_channels = x[1];
  p.in_h = x[2];
  p.in_w = x[3];
  p.out_channels = w[0];
  p.kernel_h = w[2];
  p.kernel_w = w[3];
  p.groups = node.IntAttr("group", 1);
  const Shape kernel_shape = node.IntsAttr("kernel_shape");
  if (!kernel_shape.empty() && kernel_shape != Shape{w[2], w[3]}) {
    return AnchorInvalid(node, absl::StrCat("kernel_shape ", ShapeString(kernel_shape),
                                            " disagrees with W ", ShapeString(w)));
  }
  GTCO_RETURN_IF_ERROR(SetWindow(node, p));
  if (p.groups < 1 || p.in_channels % p.groups != 0 || w[1] * p.groups != p.in_channels) {
    return AnchorInvalid(node, absl::StrCat("group ", p.groups, " does not fit X ",
                                            ShapeString(x), " and W ", ShapeString(w)));
  }
  p.x_pairs = pairs;
  AnchorHead head = NewHead(node, graph, ir::AnchorKind::kConv);
  head.workload = ir::MakeConvWorkload(p);
  if (pairs) {
    head.workload.inputs[0].dtype = ir::DType::kBF16;
    head.workload.inputs[1].dtype = ir::DType::kBF16;
  }
  if (absl::Status valid = head.workload.Validate(); !valid.ok()) {
    return AnchorInvalid(node, std::string(valid.message()));
  }
  if (head.workload.output.shape != head.onnx_shape) {
    return AnchorInvalid(node, absl::StrCat("output shape ", ShapeString(head.onnx_shape),
                                            " disagrees with the conv's ",
                                            ShapeString(head.workload.output.shape)));
  }
  if (node.inputs.size() < 3 || node.inputs[2].empty()) return head;
  const Tensor& bias = graph.tensor(node.inputs[2]);
  if (bias.shape != Shape{p.out_channels}) {
    return AnchorInvalid(node, absl::StrCat("bias B of shape ", ShapeString(bias.shape),
                                            " must be [", p.out_channels, "]"));
  }
  const int index = static_cast<int>(head.workload.inputs.size());
  head.workload.inputs.push_back(Desc({p.out_channels, 1, 1}));
  head.input_ids[bias.name] = index;
  head.result =
      Emit(head, ir::EwOp::kAdd, {head.result, OperandOf(ir::Operand::Kind::kInput, index)});
  return head;
}

}  // namespace

absl::StatusOr<ir::PoolParams> PoolParamsOf(const Node& node, const Shape& x) {
  if (x.size() != 4) {
    return AnchorUnimplemented(node, absl::StrCat("only 2-D pooling (4-D X) is supported; X is ",
                                                  ShapeString(x)));
  }
  if (node.outputs.size() > 1 && !node.outputs[1].empty()) {
    return AnchorUnimplemented(node, "the Indices output is not supported");
  }
  if (node.IntAttr("storage_order", 0) != 0) {
    return AnchorUnimplemented(node, "storage_order=1 is not supported");
  }
  ir::PoolParams p;
  p.max = node.op_type == "MaxPool";
  p.batch = x[0];
  p.channels = x[1];
  p.in_h = x[2];
  p.in_w = x[3];
  const Shape kernel = node.IntsAttr("kernel_shape");
  if (kernel.size() != 2) return AnchorInvalid(node, "kernel_shape needs 2 values");
  p.kernel_h = kernel[0];
  p.kernel_w = kernel[1];
  p.ceil_mode = node.IntAttr("ceil_mode", 0) != 0;
  p.count_include_pad = !p.max && node.IntAttr("count_include_pad", 0) != 0;
  GTCO_RETURN_IF_ERROR(SetWindow(node, p));
  return p;
}

namespace {

/// MaxPool / AveragePool over X [N, C, H, W].
absl::StatusOr<AnchorHead> LowerPool(const Node& node, const Graph& graph) {
  GTCO_ASSIGN_OR_RETURN(const ir::PoolParams p,
                        PoolParamsOf(node, graph.tensor(node.inputs.at(0)).shape));
  AnchorHead head = NewHead(node, graph, ir::AnchorKind::kPool);
  head.workload = ir::MakePoolWorkload(p);
  if (absl::Status valid = head.workload.Validate(); !valid.ok()) {
    return AnchorInvalid(node, std::string(valid.message()));
  }
  if (head.workload.output.shape != head.onnx_shape) {
    return AnchorInvalid(node, absl::StrCat("output shape ", ShapeString(head.onnx_shape),
                                            " disagrees with the pool's ",
                                            ShapeString(head.workload.output.shape)));
  }
  return head;
}

/// GlobalAveragePool over X [N, C, H, W]: a mean over each channel's H*W values (a reduce_mean of
/// N*C rows), output [N, C, 1, 1].
absl::StatusOr<AnchorHead> LowerGlobalAveragePool(const Node& node, const Graph& graph) {
  const Shape& x = graph.tensor(node.inputs.at(0)).shape;
  if (x.size() < 3) return AnchorInvalid(node, "X needs a batch, a channel and a spatial dim");
  AnchorHead head = NewHead(node, graph, ir::AnchorKind::kReduceMean);
  ir::RowParams& row = head.workload.row;
  row.rows = x[0] * x[1];
  row.cols = NumElements(x) / row.rows;
  head.workload.inputs = {Desc({row.rows, row.cols})};
  head.workload.num_anchor_inputs = 1;
  head.workload.output = Desc({row.rows, 1});
  return head;
}

}  // namespace

std::vector<int64_t> StripLeadingOnes(const std::vector<int64_t>& shape) {
  size_t first = 0;
  while (first + 1 < shape.size() && shape[first] == 1) ++first;
  Shape stripped(shape.begin() + first, shape.end());
  if (stripped.empty()) stripped.push_back(1);
  return stripped;
}

std::optional<std::vector<int64_t>> AnchorExtraShape(const std::vector<int64_t>& extra,
                                                     const std::vector<int64_t>& onnx_out,
                                                     const std::vector<int64_t>& canonical_out) {
  if (NumElements(extra) == 1) return Shape{1};
  if (extra.size() > onnx_out.size() || onnx_out.empty()) return std::nullopt;
  Shape padded(onnx_out.size() - extra.size(), 1);
  padded.insert(padded.end(), extra.begin(), extra.end());
  if (padded == onnx_out) return canonical_out;
  if (onnx_out.back() != canonical_out.back() || padded.back() != onnx_out.back()) {
    return std::nullopt;
  }
  for (size_t i = 0; i + 1 < padded.size(); ++i) {
    if (padded[i] != 1) return std::nullopt;
  }
  return Shape{canonical_out.back()};
}

std::optional<std::vector<int64_t>> AnchorExtraShape(const AnchorHead& head,
                                                     const std::vector<int64_t>& extra) {
  if (head.workload.anchor != ir::AnchorKind::kConv) {
    return AnchorExtraShape(extra, head.onnx_shape, head.workload.output.shape);
  }
  // Conv: full shape, per channel ([K, 1, 1], [1, K, 1, 1]) or scalar.
  const Shape& out = head.workload.output.shape;
  if (NumElements(extra) == 1) return Shape{1};
  if (extra.size() > out.size()) return std::nullopt;
  Shape padded(out.size() - extra.size(), 1);
  padded.insert(padded.end(), extra.begin(), extra.end());
  if (padded == out) return out;
  if (padded == Shape{1, out[1], 1, 1}) return Shape{out[1], 1, 1};
  return std::nullopt;
}

absl::StatusOr<AnchorHead> LowerAnchor(const Node& node, const Graph& graph) {
  if (node.op_type == "MatMul" || node.op_type == "MatMulInteger") {
    return LowerMatMul(node, graph);
  }
  if (node.op_type == "Gemm") return LowerGemm(node, graph);
  if (node.op_type == "Softmax") {
    return LowerRowOp(node, graph, ir::AnchorKind::kSoftmax,
                      node.IntAttr("axis", graph.opset >= 13 || graph.opset == 0 ? -1 : 1));
  }
  if (node.op_type == "LayerNormalization") return LowerLayerNorm(node, graph);
  if (node.op_type == "ReduceMean") return LowerReduceMean(node, graph);
  if (node.op_type == "Conv") return LowerConv(node, graph);
  if (node.op_type == "GlobalAveragePool") return LowerGlobalAveragePool(node, graph);
  if (node.op_type == "MaxPool" || node.op_type == "AveragePool") return LowerPool(node, graph);
  return AnchorInvalid(node, "not an anchor op");
}

}  // namespace gtco::graph
