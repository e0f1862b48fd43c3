// Reference ONNX ops that create tensors or describe shapes: Constant, ConstantOfShape, Shape,
// Size, Range and EyeLike.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/reference_ops_internal.h"

namespace gtco::runtime::reference::internal {
namespace {

Value Vector(ElemType dtype, const std::vector<double>& values) {
  Value value = MakeValue(dtype, {static_cast<int64_t>(values.size())});
  value.data = values;
  return value;
}

OpResult Constant(const OpContext& ctx) {
  if (const Attr* value = ctx.FindAttr("value")) {
    if (value->kind != Attr::Kind::kTensor || value->tensor.size() != 1) {
      return ctx.Invalid("value must be a tensor attribute");
    }
    return Single(value->tensor[0]);
  }
  if (ctx.HasAttr("value_float")) {
    Value out = MakeValue(ElemType::kF32, {});
    out.data[0] = ctx.Float("value_float", 0);
    return Single(std::move(out));
  }
  if (ctx.HasAttr("value_int")) {
    Value out = MakeValue(ElemType::kI64, {});
    out.data[0] = static_cast<double>(ctx.Int("value_int", 0));
    return Single(std::move(out));
  }
  if (ctx.HasAttr("value_floats"))
    return Single(Vector(ElemType::kF32, ctx.Floats("value_floats")));
  if (ctx.HasAttr("value_ints")) {
    const std::vector<int64_t> ints = ctx.Ints("value_ints");
    return Single(Vector(ElemType::kI64, std::vector<double>(ints.begin(), ints.end())));
  }
  for (const char* name : {"sparse_value", "value_string", "value_strings"}) {
    if (ctx.HasAttr(name)) return ctx.Unsupported(absl::StrCat("attribute ", name));
  }
  return ctx.Invalid("needs a value attribute");
}

OpResult ConstantOfShape(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* shape_value, ctx.Required(0));
  const Shape shape = OpContext::IntsOf(*shape_value);
  for (int64_t dim : shape) {
    if (dim < 0) return ctx.Invalid(absl::StrCat("negative dim in ", ShapeText(shape)));
  }
  ElemType dtype = ElemType::kF32;
  double fill = 0;
  if (const Attr* value = ctx.FindAttr("value")) {
    if (value->kind != Attr::Kind::kTensor || value->tensor.size() != 1 ||
        value->tensor[0].data.size() != 1) {
      return ctx.Invalid("value must be a one-element tensor");
    }
    dtype = value->tensor[0].dtype;
    fill = value->tensor[0].data[0];
  }
  Value out = MakeValue(dtype, shape);
  std::fill(out.data.begin(), out.data.end(), fill);
  return Single(std::move(out));
}

OpResult ShapeOp(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  int64_t start = ctx.Int("start", 0), end = ctx.Int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  std::vector<double> dims;
  for (int64_t dim = start; dim < end; ++dim) dims.push_back(static_cast<double>(x->shape[dim]));
  return Single(Vector(ElemType::kI64, dims));
}

OpResult Size(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  Value out = MakeValue(ElemType::kI64, {});
  out.data[0] = static_cast<double>(x->NumElements());
  return Single(std::move(out));
}

OpResult Range(const OpContext& ctx) {
  double bounds[3];
  ElemType dtype = ElemType::kF32;
  for (int index = 0; index < 3; ++index) {
    GTCO_REF_ASSIGN_OR_RETURN(const Value* value, ctx.Required(index));
    if (value->data.size() != 1) return ctx.Invalid("start, limit and delta must be scalars");
    bounds[index] = value->data[0];
    if (index == 0) dtype = value->dtype;
  }
  const double start = bounds[0], limit = bounds[1], delta = bounds[2];
  if (delta == 0) return ctx.Invalid("delta must not be 0");
  const double steps = std::ceil((limit - start) / delta);
  const int64_t count = std::max<int64_t>(0, ToInt64(steps));
  Value out = MakeValue(dtype, {count});
  for (int64_t i = 0; i < count; ++i) out.data[i] = start + static_cast<double>(i) * delta;
  return Single(std::move(out));
}

OpResult EyeLike(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  if (x->shape.size() != 2) return ctx.Invalid("input must be 2-D");
  ElemType dtype = x->dtype;
  if (ctx.HasAttr("dtype")) {
    const absl::StatusOr<ElemType> parsed = ElemTypeFromOnnx(ctx.Int("dtype", 1));
    if (!parsed.ok()) return ctx.Unsupported(absl::StrCat("dtype=", ctx.Int("dtype", 1)));
    dtype = *parsed;
  }
  const int64_t k = ctx.Int("k", 0);
  Value out = MakeValue(dtype, x->shape);
  for (int64_t row = 0; row < x->shape[0]; ++row) {
    const int64_t col = row + k;
    if (col >= 0 && col < x->shape[1]) out.data[row * x->shape[1] + col] = 1.0;
  }
  return Single(std::move(out));
}

}  // namespace

void AddCreateOps(OpTable* t) {
  (*t)["Constant"] = Constant;
  (*t)["ConstantOfShape"] = ConstantOfShape;
  (*t)["Shape"] = ShapeOp;
  (*t)["Size"] = Size;
  (*t)["Range"] = Range;
  (*t)["EyeLike"] = EyeLike;
}

}  // namespace gtco::runtime::reference::internal
