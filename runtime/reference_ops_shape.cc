// Reference ONNX data-movement ops that reshape or rearrange a tensor: Reshape, Transpose,
// Flatten, Squeeze, Unsqueeze, Concat, Split, Slice, Expand, Tile, Pad, DepthToSpace,
// SpaceToDepth, Trilu.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/reference_ops_internal.h"

namespace gtco::runtime::reference::internal {
namespace {

Value Reshaped(const Value& value, Shape shape) {
  Value out;
  out.dtype = value.dtype;
  out.shape = std::move(shape);
  out.data = value.data;
  return out;
}

OpResult Reshape(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  Shape target = ctx.Ints("shape");
  if (ctx.opset() >= 5) {
    GTCO_REF_ASSIGN_OR_RETURN(const Value* shape, ctx.Required(1));
    target = OpContext::IntsOf(*shape);
  }
  const bool allowzero = ctx.Int("allowzero", 0) != 0;
  int64_t known = 1, inferred = -1;
  for (size_t dim = 0; dim < target.size(); ++dim) {
    if (target[dim] == 0 && !allowzero) {
      if (dim >= x->shape.size()) return ctx.Invalid("a 0 in shape has no input dim to copy");
      target[dim] = x->shape[dim];
    }
    if (target[dim] == -1) {
      if (inferred >= 0) return ctx.Invalid("shape has more than one -1");
      inferred = static_cast<int64_t>(dim);
      continue;
    }
    if (target[dim] < 0)
      return ctx.Invalid(absl::StrCat("negative dim in shape ", ShapeText(target)));
    known *= target[dim];
  }
  const int64_t count = x->NumElements();
  if (inferred >= 0) {
    if (known == 0 || count % known != 0) {
      return ctx.Invalid(
          absl::StrCat("cannot reshape ", ShapeText(x->shape), " to ", ShapeText(target)));
    }
    target[inferred] = count / known;
  } else if (known != count) {
    return ctx.Invalid(
        absl::StrCat("cannot reshape ", ShapeText(x->shape), " to ", ShapeText(target)));
  }
  return Single(Reshaped(*x, std::move(target)));
}

OpResult Transpose(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  std::vector<int64_t> perm;
  for (int64_t dim = rank - 1; dim >= 0; --dim) perm.push_back(dim);
  perm = ctx.Ints("perm", perm);
  std::vector<bool> seen(rank, false);
  if (static_cast<int64_t>(perm.size()) != rank) return ctx.Invalid("perm does not match the rank");
  for (int64_t& axis : perm) {
    GTCO_REF_ASSIGN_OR_RETURN(axis, ctx.Axis(axis, rank));
    if (seen[axis]) return ctx.Invalid("perm repeats an axis");
    seen[axis] = true;
  }
  return Single(TransposeValue(*x, perm));
}

OpResult Flatten(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  int64_t axis = ctx.Int("axis", 1);
  if (axis < -rank || axis > rank) return ctx.Invalid(absl::StrCat("axis ", axis, " out of range"));
  if (axis < 0) axis += rank;
  int64_t outer = 1;
  for (int64_t dim = 0; dim < axis; ++dim) outer *= x->shape[dim];
  const int64_t inner = outer == 0 ? 0 : x->NumElements() / outer;
  Shape shape = {outer, inner};
  if (outer == 0) {
    shape[1] = 1;
    for (int64_t dim = axis; dim < rank; ++dim) shape[1] *= x->shape[dim];
  }
  return Single(Reshaped(*x, shape));
}

/// Axes from the "axes" attribute, or input 1 from `input_opset`.
std::vector<int64_t> AxesOf(const OpContext& ctx, int input_opset, bool* given) {
  if (ctx.opset() >= input_opset) {
    const Value* axes = ctx.input(1);
    *given = axes != nullptr;
    return axes != nullptr ? OpContext::IntsOf(*axes) : std::vector<int64_t>{};
  }
  *given = ctx.HasAttr("axes");
  return ctx.Ints("axes");
}

OpResult Squeeze(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  bool given = false;
  const std::vector<int64_t> raw = AxesOf(ctx, 13, &given);
  GTCO_REF_ASSIGN_OR_RETURN(const std::vector<int64_t> axes, ctx.Axes(raw, rank));
  std::vector<bool> drop(rank, false);
  for (int64_t dim = 0; dim < rank; ++dim) drop[dim] = !given && x->shape[dim] == 1;
  for (int64_t axis : axes) {
    if (x->shape[axis] != 1) {
      return ctx.Invalid(absl::StrCat("cannot squeeze axis ", axis, " of size ", x->shape[axis]));
    }
    drop[axis] = true;
  }
  Shape shape;
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (!drop[dim]) shape.push_back(x->shape[dim]);
  }
  return Single(Reshaped(*x, shape));
}

OpResult Unsqueeze(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  bool given = false;
  const std::vector<int64_t> raw = AxesOf(ctx, 13, &given);
  const int64_t rank = static_cast<int64_t>(x->shape.size() + raw.size());
  GTCO_REF_ASSIGN_OR_RETURN(const std::vector<int64_t> axes, ctx.Axes(raw, rank));
  std::vector<bool> inserted(rank, false);
  for (int64_t axis : axes) inserted[axis] = true;
  Shape shape;
  size_t next = 0;
  for (int64_t dim = 0; dim < rank; ++dim) shape.push_back(inserted[dim] ? 1 : x->shape[next++]);
  return Single(Reshaped(*x, shape));
}

OpResult Concat(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* first, ctx.Required(0));
  const int64_t rank = static_cast<int64_t>(first->shape.size());
  if (!ctx.HasAttr("axis")) return ctx.Invalid("axis is required");
  GTCO_REF_ASSIGN_OR_RETURN(const int64_t axis, ctx.Axis(ctx.Int("axis", 0), rank));
  Shape shape = first->shape;
  shape[axis] = 0;
  for (int index = 0; index < ctx.num_inputs(); ++index) {
    GTCO_REF_ASSIGN_OR_RETURN(const Value* input, ctx.Required(index));
    bool matches = static_cast<int64_t>(input->shape.size()) == rank;
    for (int64_t dim = 0; matches && dim < rank; ++dim) {
      matches = dim == axis || input->shape[dim] == first->shape[dim];
    }
    if (!matches) {
      return ctx.Invalid(absl::StrCat("input ", index, " of shape ", ShapeText(input->shape),
                                      " does not match ", ShapeText(first->shape), " off axis ",
                                      axis));
    }
    shape[axis] += input->shape[axis];
  }
  int64_t outer = 1;
  for (int64_t dim = 0; dim < axis; ++dim) outer *= shape[dim];
  Value out = MakeValue(first->dtype, shape);
  auto dst = out.data.begin();
  for (int64_t o = 0; o < outer; ++o) {
    for (int index = 0; index < ctx.num_inputs(); ++index) {
      const Value& input = *ctx.input(index);
      const int64_t chunk = outer == 0 ? 0 : input.NumElements() / outer;
      dst = std::copy(input.data.begin() + o * chunk, input.data.begin() + (o + 1) * chunk, dst);
    }
  }
  return Single(std::move(out));
}

/// The part [begin, begin + size) along `axis` of `x`.
Value SliceAxis(const Value& x, int64_t axis, int64_t begin, int64_t size) {
  Shape shape = x.shape;
  shape[axis] = size;
  Shape strides = Strides(x.shape);
  Value out;
  out.dtype = x.dtype;
  out.data = StridedGather(x.data, begin * strides[axis], strides, shape);
  out.shape = std::move(shape);
  return out;
}

OpResult Split(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  GTCO_REF_ASSIGN_OR_RETURN(const int64_t axis, ctx.Axis(ctx.Int("axis", 0), rank));
  const int64_t dim = x->shape[axis];
  std::vector<int64_t> sizes = ctx.Ints("split");
  if (ctx.opset() >= 13)
    sizes = ctx.input(1) != nullptr ? OpContext::IntsOf(*ctx.input(1)) : Shape{};
  if (sizes.empty()) {
    const int64_t parts =
        ctx.HasAttr("num_outputs") ? ctx.Int("num_outputs", 1) : ctx.num_outputs();
    if (parts <= 0) return ctx.Invalid("needs at least one output");
    const int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t part = 0; part < parts; ++part) {
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - part * chunk)));
    }
  }
  int64_t total = 0;
  for (int64_t size : sizes) total += size;
  if (total != dim || std::any_of(sizes.begin(), sizes.end(), [](int64_t s) { return s < 0; })) {
    return ctx.Invalid(absl::StrCat("split sizes do not add up to ", dim));
  }
  std::vector<Value> outputs;
  int64_t begin = 0;
  for (int64_t size : sizes) {
    outputs.push_back(SliceAxis(*x, axis, begin, size));
    begin += size;
  }
  return outputs;
}

OpResult Slice(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() >= 10) {
    GTCO_REF_ASSIGN_OR_RETURN(const Value* starts_value, ctx.Required(1));
    GTCO_REF_ASSIGN_OR_RETURN(const Value* ends_value, ctx.Required(2));
    starts = OpContext::IntsOf(*starts_value);
    ends = OpContext::IntsOf(*ends_value);
    if (ctx.input(3) != nullptr) axes = OpContext::IntsOf(*ctx.input(3));
    if (ctx.input(4) != nullptr) steps = OpContext::IntsOf(*ctx.input(4));
  } else {
    starts = ctx.Ints("starts");
    ends = ctx.Ints("ends");
    axes = ctx.Ints("axes");
  }
  if (axes.empty()) {
    for (size_t axis = 0; axis < starts.size(); ++axis) axes.push_back(static_cast<int64_t>(axis));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return ctx.Invalid("starts, ends, axes and steps differ in length");
  }
  GTCO_REF_ASSIGN_OR_RETURN(const std::vector<int64_t> normalized, ctx.Axes(axes, rank));
  const Shape in_strides = Strides(x->shape);
  Shape shape = x->shape, strides = in_strides;
  int64_t base = 0;
  for (size_t i = 0; i < normalized.size(); ++i) {
    const int64_t axis = normalized[i], dim = x->shape[axis], step = steps[i];
    if (step == 0) return ctx.Invalid("steps must not be 0");
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    int64_t count = 0;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      count = start > end ? (start - end - step - 1) / -step : 0;
    }
    shape[axis] = count;
    strides[axis] = in_strides[axis] * step;
    if (count > 0) base += start * in_strides[axis];
  }
  Value out;
  out.dtype = x->dtype;
  out.data = StridedGather(x->data, base, strides, shape);
  out.shape = std::move(shape);
  return Single(std::move(out));
}

OpResult Expand(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* shape_value, ctx.Required(1));
  const Shape target = OpContext::IntsOf(*shape_value);
  for (int64_t dim : target) {
    if (dim < 0) return ctx.Invalid(absl::StrCat("negative dim in shape ", ShapeText(target)));
  }
  GTCO_REF_ASSIGN_OR_RETURN(const Shape shape, BroadcastShapes(ctx, {x->shape, target}));
  Value out;
  out.dtype = x->dtype;
  out.data = BroadcastData(*x, shape);
  out.shape = shape;
  return Single(std::move(out));
}

OpResult Tile(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* repeats_value, ctx.Required(1));
  const std::vector<int64_t> repeats = OpContext::IntsOf(*repeats_value);
  if (repeats.size() != x->shape.size()) return ctx.Invalid("repeats does not match the rank");
  // Tiling is broadcasting [1, d0, 1, d1, ...] to [r0, d0, r1, d1, ...].
  Value interleaved;
  interleaved.data = x->data;
  Shape target, shape;
  for (size_t dim = 0; dim < repeats.size(); ++dim) {
    if (repeats[dim] < 0) return ctx.Invalid("repeats must not be negative");
    interleaved.shape.insert(interleaved.shape.end(), {1, x->shape[dim]});
    target.insert(target.end(), {repeats[dim], x->shape[dim]});
    shape.push_back(repeats[dim] * x->shape[dim]);
  }
  Value out;
  out.dtype = x->dtype;
  out.data = BroadcastData(interleaved, target);
  out.shape = std::move(shape);
  return Single(std::move(out));
}

/// The input index an output index `o` of a padded dim reads, or -1 for the constant.
int64_t PadSource(int64_t o, int64_t pad_begin, int64_t dim, const std::string& mode) {
  int64_t i = o - pad_begin;
  if (i >= 0 && i < dim) return i;
  if (mode == "constant" || dim == 0) return -1;
  if (mode == "edge") return std::clamp<int64_t>(i, 0, dim - 1);
  if (mode == "wrap") return ((i % dim) + dim) % dim;
  if (dim == 1) return 0;  // reflect
  const int64_t period = 2 * (dim - 1);
  i = ((i % period) + period) % period;
  return i < dim ? i : period - i;
}

OpResult Pad(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  const std::string mode = ctx.String("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    return ctx.Unsupported(absl::StrCat("mode='", mode, "'"));
  }
  std::vector<int64_t> pads = ctx.Ints(ctx.HasAttr("pads") ? "pads" : "paddings");  // opset < 11
  double constant = ctx.Float("value", 0.0);
  std::vector<int64_t> axes;
  if (ctx.opset() >= 11) {
    GTCO_REF_ASSIGN_OR_RETURN(const Value* pads_value, ctx.Required(1));
    pads = OpContext::IntsOf(*pads_value);
    const Value* constant_value = ctx.input(2);
    if (constant_value != nullptr && !constant_value->data.empty())
      constant = constant_value->data[0];
    if (ctx.input(3) != nullptr) axes = OpContext::IntsOf(*ctx.input(3));
  }
  if (axes.empty()) {
    for (int64_t dim = 0; dim < rank; ++dim) axes.push_back(dim);
  }
  GTCO_REF_ASSIGN_OR_RETURN(const std::vector<int64_t> normalized, ctx.Axes(axes, rank));
  if (pads.size() != 2 * normalized.size()) {
    return ctx.Invalid(
        absl::StrCat("pads has ", pads.size(), " values for ", normalized.size(), " axes"));
  }
  Shape begin(rank, 0), shape = x->shape;
  for (size_t i = 0; i < normalized.size(); ++i) {
    const int64_t axis = normalized[i];
    begin[axis] = pads[i];
    shape[axis] += pads[i] + pads[normalized.size() + i];
    if (shape[axis] < 0) return ctx.Invalid("pads remove more than the whole dim");
    if (mode != "constant" && x->shape[axis] == 0 && shape[axis] > 0) {
      return ctx.Invalid(absl::StrCat("cannot ", mode, "-pad an empty dim"));
    }
  }
  // Per dim, the source offset of each output index (-1: the constant).
  const Shape in_strides = Strides(x->shape);
  std::vector<std::vector<int64_t>> source(rank);
  for (int64_t dim = 0; dim < rank; ++dim) {
    for (int64_t o = 0; o < shape[dim]; ++o) {
      const int64_t i = PadSource(o, begin[dim], x->shape[dim], mode);
      source[dim].push_back(i < 0 ? -1 : i * in_strides[dim]);
    }
  }
  Value out = MakeValue(x->dtype, shape);
  Shape index(rank, 0);
  for (double& element : out.data) {
    int64_t offset = 0;
    bool inside = true;
    for (int64_t dim = 0; dim < rank && inside; ++dim) {
      const int64_t part = source[dim][index[dim]];
      inside = part >= 0;
      offset += part;
    }
    element = inside ? x->data[offset] : constant;
    for (int64_t dim = rank - 1; dim >= 0; --dim) {
      if (++index[dim] < shape[dim]) break;
      index[dim] = 0;
    }
  }
  return Single(std::move(out));
}

OpResult DepthToSpace(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  const int64_t b = ctx.Int("blocksize", 0);
  if (x->shape.size() != 4 || b <= 0 || x->shape[1] % (b * b) != 0) {
    return ctx.Invalid(
        absl::StrCat("cannot move depth of ", ShapeText(x->shape), " by blocksize ", b));
  }
  const int64_t n = x->shape[0], c = x->shape[1] / (b * b), h = x->shape[2], w = x->shape[3];
  const std::string mode = ctx.String("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return ctx.Unsupported(absl::StrCat("mode='", mode, "'"));
  const bool dcr = mode == "DCR";
  const Value grouped = Reshaped(*x, dcr ? Shape{n, b, b, c, h, w} : Shape{n, c, b, b, h, w});
  Value out = TransposeValue(grouped, dcr ? Shape{0, 3, 4, 1, 5, 2} : Shape{0, 1, 4, 2, 5, 3});
  out.shape = {n, c, h * b, w * b};
  return Single(std::move(out));
}

OpResult SpaceToDepth(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  const int64_t b = ctx.Int("blocksize", 0);
  if (x->shape.size() != 4 || b <= 0 || x->shape[2] % b != 0 || x->shape[3] % b != 0) {
    return ctx.Invalid(
        absl::StrCat("cannot move space of ", ShapeText(x->shape), " by blocksize ", b));
  }
  const int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2] / b, w = x->shape[3] / b;
  Value out = TransposeValue(Reshaped(*x, {n, c, h, b, w, b}), {0, 3, 5, 1, 2, 4});
  out.shape = {n, c * b * b, h, w};
  return Single(std::move(out));
}

OpResult Trilu(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  if (x->shape.size() < 2) return ctx.Invalid("input must have rank >= 2");
  const int64_t k =
      ctx.input(1) != nullptr && !ctx.input(1)->data.empty() ? ToInt64(ctx.input(1)->data[0]) : 0;
  const bool upper = ctx.Int("upper", 1) != 0;
  const int64_t rows = x->shape[x->shape.size() - 2], cols = x->shape.back();
  Value out = *x;
  for (size_t index = 0; index < out.data.size(); ++index) {
    const int64_t col = static_cast<int64_t>(index) % cols;
    const int64_t row = static_cast<int64_t>(index) / cols % rows;
    const bool keep = upper ? col - row >= k : col - row <= k;
    if (!keep) out.data[index] = 0;
  }
  return Single(std::move(out));
}

}  // namespace

void AddShapeOps(OpTable* t) {
  (*t)["Reshape"] = Reshape;
  (*t)["Transpose"] = Transpose;
  (*t)["Flatten"] = Flatten;
  (*t)["Squeeze"] = Squeeze;
  (*t)["Unsqueeze"] = Unsqueeze;
  (*t)["Concat"] = Concat;
  (*t)["Split"] = Split;
  (*t)["Slice"] = Slice;
  (*t)["Expand"] = Expand;
  (*t)["Tile"] = Tile;
  (*t)["Pad"] = Pad;
  (*t)["DepthToSpace"] = DepthToSpace;
  (*t)["SpaceToDepth"] = SpaceToDepth;
  (*t)["Trilu"] = Trilu;
}

}  // namespace gtco::runtime::reference::internal
