// Reference ONNX linear algebra: MatMul, Gemm, MatMulInteger, QLinearMatMul, QuantizeLinear,
// DequantizeLinear, DynamicQuantizeLinear (and Einsum, in reference_ops_einsum.cc).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/reference_ops_internal.h"

namespace gtco::runtime::reference::internal {
namespace {

/// out[M, N] += a[M, K] * b[K, N], row-major, in i-k-j order.
void MatMulKernel(const double* a, const double* b, double* out, int64_t m, int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    double* row = out + i * n;
    for (int64_t p = 0; p < k; ++p) {
      const double scale = a[i * k + p];
      const double* b_row = b + p * n;
      for (int64_t j = 0; j < n; ++j) row[j] += scale * b_row[j];
    }
  }
}

/// For each element of `out_shape`, the flat index of the element of `shape` it broadcasts from.
std::vector<int64_t> BroadcastIndex(const Shape& shape, const Shape& out_shape) {
  Value grid;
  grid.shape = shape;
  grid.data.resize(NumElements(shape));
  for (size_t index = 0; index < grid.data.size(); ++index)
    grid.data[index] = static_cast<double>(index);
  const std::vector<double> mapped = BroadcastData(grid, out_shape);
  return std::vector<int64_t>(mapped.begin(), mapped.end());
}

/// numpy matmul: 1-D operands are promoted (and their dim dropped from the result), batch dims
/// broadcast.
absl::StatusOr<Value> MatMulValues(const OpContext& ctx, const Value& a, const Value& b,
                                   ElemType out_type) {
  if (a.shape.empty() || b.shape.empty()) return ctx.Invalid("operands must not be scalars");
  Shape a_shape = a.shape, b_shape = b.shape;
  const bool a_vector = a_shape.size() == 1, b_vector = b_shape.size() == 1;
  if (a_vector) a_shape.insert(a_shape.begin(), 1);
  if (b_vector) b_shape.push_back(1);
  const int64_t m = a_shape[a_shape.size() - 2], k = a_shape.back();
  const int64_t n = b_shape.back();
  if (b_shape[b_shape.size() - 2] != k) {
    return ctx.Invalid(absl::StrCat("shapes ", ShapeText(a.shape), " and ", ShapeText(b.shape),
                                    " do not multiply"));
  }
  const Shape a_batch(a_shape.begin(), a_shape.end() - 2),
      b_batch(b_shape.begin(), b_shape.end() - 2);
  GTCO_REF_ASSIGN_OR_RETURN(const Shape batch, BroadcastShapes(ctx, {a_batch, b_batch}));
  const std::vector<int64_t> a_index = BroadcastIndex(a_batch, batch);
  const std::vector<int64_t> b_index = BroadcastIndex(b_batch, batch);
  Shape out_shape = batch;
  if (!a_vector) out_shape.push_back(m);
  if (!b_vector) out_shape.push_back(n);
  Value out = MakeValue(out_type, out_shape);
  for (size_t item = 0; item < a_index.size(); ++item) {
    MatMulKernel(a.data.data() + a_index[item] * m * k, b.data.data() + b_index[item] * k * n,
                 out.data.data() + item * m * n, m, k, n);
  }
  return out;
}

OpResult MatMul(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* a, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* b, ctx.Required(1));
  GTCO_REF_ASSIGN_OR_RETURN(Value out, MatMulValues(ctx, *a, *b, a->dtype));
  return Single(std::move(out));
}

OpResult Gemm(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* a, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* b, ctx.Required(1));
  if (a->shape.size() != 2 || b->shape.size() != 2) return ctx.Invalid("A and B must be 2-D");
  const Value lhs = ctx.Int("transA", 0) != 0 ? TransposeValue(*a, {1, 0}) : *a;
  const Value rhs = ctx.Int("transB", 0) != 0 ? TransposeValue(*b, {1, 0}) : *b;
  GTCO_REF_ASSIGN_OR_RETURN(Value out, MatMulValues(ctx, lhs, rhs, a->dtype));
  const double alpha = ctx.Float("alpha", 1.0), beta = ctx.Float("beta", 1.0);
  for (double& element : out.data) element *= alpha;
  if (const Value* c = ctx.input(2)) {
    GTCO_REF_ASSIGN_OR_RETURN(const Shape shape, BroadcastShapes(ctx, {out.shape, c->shape}));
    if (shape != out.shape) return ctx.Invalid("C does not broadcast to [M, N]");
    const std::vector<double> bias = BroadcastData(*c, out.shape);
    for (size_t index = 0; index < bias.size(); ++index) out.data[index] += beta * bias[index];
  }
  return Single(std::move(out));
}

OpResult MatMulInteger(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* a, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* b, ctx.Required(1));
  if (a->shape.empty() || b->shape.empty()) return ctx.Invalid("operands must not be scalars");
  Value lhs = *a, rhs = *b;
  if (const Value* zero = ctx.input(2)) {  // scalar, or one per row of A
    const int64_t rows = a->shape.size() >= 2 ? a->shape[a->shape.size() - 2] : 1;
    const int64_t cols = a->shape.back();
    if (zero->NumElements() != 1 && zero->NumElements() != rows) {
      return ctx.Invalid("a_zero_point must be a scalar or hold one value per row of A");
    }
    for (size_t index = 0; index < lhs.data.size(); ++index) {
      const int64_t row = static_cast<int64_t>(index) / cols % rows;
      lhs.data[index] -= zero->data[zero->NumElements() == 1 ? 0 : row];
    }
  }
  if (const Value* zero = ctx.input(3)) {  // scalar, or one per column of B
    const int64_t cols = b->shape.back();
    if (zero->NumElements() != 1 && zero->NumElements() != cols) {
      return ctx.Invalid("b_zero_point must be a scalar or hold one value per column of B");
    }
    for (size_t index = 0; index < rhs.data.size(); ++index) {
      rhs.data[index] -= zero->data[zero->NumElements() == 1 ? 0 : index % cols];
    }
  }
  GTCO_REF_ASSIGN_OR_RETURN(Value out, MatMulValues(ctx, lhs, rhs, ElemType::kI32));
  return Single(std::move(out));
}

/// For quantization: the index into scale/zero point of each element of `x` (0 per tensor).
absl::StatusOr<std::vector<int64_t>> QuantIndex(const OpContext& ctx, const Value& x,
                                                const Value& scale) {
  std::vector<int64_t> channel(x.data.size(), 0);
  if (scale.NumElements() == 1) return channel;
  if (scale.shape.size() != 1) return ctx.Unsupported("blocked quantization (scale of rank > 1)");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  GTCO_REF_ASSIGN_OR_RETURN(const int64_t axis, ctx.Axis(ctx.Int("axis", 1), rank));
  if (x.shape[axis] != scale.shape[0]) {
    return ctx.Invalid(absl::StrCat("scale has ", scale.shape[0], " values for axis ", axis,
                                    " of size ", x.shape[axis]));
  }
  int64_t inner = 1;
  for (int64_t dim = axis + 1; dim < rank; ++dim) inner *= x.shape[dim];
  for (size_t index = 0; index < channel.size(); ++index) {
    channel[index] = static_cast<int64_t>(index) / inner % x.shape[axis];
  }
  return channel;
}

OpResult QuantizeLinear(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* scale, ctx.Required(1));
  const Value* zero = ctx.input(2);
  ElemType type = ElemType::kU8;
  if (zero != nullptr) {
    type = zero->dtype;
  } else if (ctx.HasAttr("output_dtype") && ctx.Int("output_dtype", 0) != 0) {
    const absl::StatusOr<ElemType> parsed = ElemTypeFromOnnx(ctx.Int("output_dtype", 0));
    if (!parsed.ok())
      return ctx.Unsupported(absl::StrCat("output_dtype=", ctx.Int("output_dtype", 0)));
    type = *parsed;
  }
  if (type != ElemType::kU8 && type != ElemType::kI8) {
    return ctx.Unsupported(absl::StrCat("output type ", ElemTypeName(type)));
  }
  if (zero != nullptr && zero->NumElements() != scale->NumElements()) {
    return ctx.Invalid("y_zero_point and y_scale differ in size");
  }
  GTCO_REF_ASSIGN_OR_RETURN(const std::vector<int64_t> channel, QuantIndex(ctx, *x, *scale));
  const double lo = type == ElemType::kU8 ? 0 : -128, hi = type == ElemType::kU8 ? 255 : 127;
  Value out = MakeValue(type, x->shape);
  for (size_t index = 0; index < x->data.size(); ++index) {
    const int64_t c = channel[index];
    const double scaled = RoundTo(ElemType::kF32, x->data[index] / scale->data[c]);
    const double shifted = std::nearbyint(scaled) + (zero != nullptr ? zero->data[c] : 0.0);
    out.data[index] = std::isnan(shifted) ? 0.0 : std::clamp(shifted, lo, hi);
  }
  return Single(std::move(out));
}

OpResult DequantizeLinear(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* scale, ctx.Required(1));
  const Value* zero = ctx.input(2);
  if (zero != nullptr && zero->NumElements() != scale->NumElements()) {
    return ctx.Invalid("x_zero_point and x_scale differ in size");
  }
  GTCO_REF_ASSIGN_OR_RETURN(const std::vector<int64_t> channel, QuantIndex(ctx, *x, *scale));
  Value out = MakeValue(scale->dtype, x->shape);
  for (size_t index = 0; index < x->data.size(); ++index) {
    const int64_t c = channel[index];
    out.data[index] = (x->data[index] - (zero != nullptr ? zero->data[c] : 0.0)) * scale->data[c];
  }
  return Single(std::move(out));
}

/// ONNX DynamicQuantizeLinear to u8, in f32 arithmetic as the ONNX reference computes it (an
/// all-zero x gives scale 1).
OpResult DynamicQuantizeLinear(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  auto f32 = [](double v) { return RoundTo(ElemType::kF32, v); };
  double max = 0, min = 0;
  for (double v : x->data) {
    max = std::max(max, v);
    min = std::min(min, v);
  }
  const double scale = max == min ? 1.0 : f32((max - min) / 255.0);
  const double zero = std::nearbyint(std::clamp(f32(0.0 - f32(min / scale)), 0.0, 255.0));
  Value y = MakeValue(ElemType::kU8, x->shape);
  for (size_t index = 0; index < x->data.size(); ++index) {
    y.data[index] = std::clamp(std::nearbyint(f32(x->data[index] / scale)) + zero, 0.0, 255.0);
  }
  Value scale_out = MakeValue(ElemType::kF32, {});
  scale_out.data[0] = scale;
  Value zero_out = MakeValue(ElemType::kU8, {});
  zero_out.data[0] = zero;
  return std::vector<Value>{std::move(y), std::move(scale_out), std::move(zero_out)};
}

/// QLinearMatMul: the integer product of the shifted operands requantized to y's scale and zero
/// point. Scales and zero points per tensor, b's also per column.
OpResult QLinearMatMul(const OpContext& ctx) {
  const Value* in[8];
  for (int index = 0; index < 8; ++index) {
    GTCO_REF_ASSIGN_OR_RETURN(in[index], ctx.Required(index));
  }
  const Value &a = *in[0], &a_scale = *in[1], &a_zero = *in[2], &b = *in[3], &b_scale = *in[4];
  const Value &b_zero = *in[5], &y_scale = *in[6], &y_zero = *in[7];
  if (b.shape.empty()) return ctx.Invalid("b must not be a scalar");
  const int64_t cols = b.shape.back();
  if (a_scale.NumElements() != 1 || a_zero.NumElements() != 1 || y_scale.NumElements() != 1 ||
      y_zero.NumElements() != 1 || (b_scale.NumElements() != 1 && b_scale.NumElements() != cols) ||
      b_zero.NumElements() != b_scale.NumElements()) {
    return ctx.Unsupported("scales or zero points other than per tensor (per column for b)");
  }
  Value lhs = a, rhs = b;
  for (double& v : lhs.data) v -= a_zero.data[0];
  for (size_t index = 0; index < rhs.data.size(); ++index) {
    rhs.data[index] -= b_zero.data[b_zero.NumElements() == 1 ? 0 : index % cols];
  }
  GTCO_REF_ASSIGN_OR_RETURN(Value acc, MatMulValues(ctx, lhs, rhs, ElemType::kI32));
  const ElemType type = y_zero.dtype;
  const double lo = type == ElemType::kI8 ? -128 : 0, hi = type == ElemType::kI8 ? 127 : 255;
  const int64_t out_cols = acc.shape.empty() ? 1 : acc.shape.back();
  Value out = MakeValue(type, acc.shape);
  for (size_t index = 0; index < acc.data.size(); ++index) {
    const int64_t col = static_cast<int64_t>(index) % out_cols;
    // The multiplier in f32 as the ONNX reference computes it: a_scale * b_scale / y_scale.
    const double multiplier =
        RoundTo(ElemType::kF32,
                RoundTo(ElemType::kF32,
                        a_scale.data[0] * b_scale.data[b_scale.NumElements() == 1 ? 0 : col]) /
                    y_scale.data[0]);
    const double q = std::nearbyint(acc.data[index] * multiplier);
    out.data[index] = std::clamp(q + y_zero.data[0], lo, hi);
  }
  return Single(std::move(out));
}

}  // namespace

void AddLinalgOps(OpTable* t) {
  (*t)["MatMul"] = MatMul;
  (*t)["Gemm"] = Gemm;
  (*t)["MatMulInteger"] = MatMulInteger;
  (*t)["QLinearMatMul"] = QLinearMatMul;
  (*t)["QuantizeLinear"] = QuantizeLinear;
  (*t)["DequantizeLinear"] = DequantizeLinear;
  (*t)["DynamicQuantizeLinear"] = DynamicQuantizeLinear;
  (*t)["Einsum"] = Einsum;
}

}  // namespace gtco::runtime::reference::internal
