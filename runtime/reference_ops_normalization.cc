// Reference ONNX normalization ops: Softmax, LogSoftmax, Hardmax, LayerNormalization,
// BatchNormalization, InstanceNormalization, GroupNormalization, LpNormalization,
// MeanVarianceNormalization and LRN.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/reference_ops_internal.h"

namespace gtco::runtime::reference::internal {
namespace {

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

/// Softmax-like ops over one axis (opset >= 13), or over the 2-D coercion [prod(dims[:axis]),
/// prod(dims[axis:])] before opset 13.
OpResult SoftmaxLike(const OpContext& ctx, SoftmaxKind kind) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  const bool coerce = ctx.opset() < 13;
  GTCO_REF_ASSIGN_OR_RETURN(const int64_t axis,
                            ctx.Axis(ctx.Int("axis", coerce ? 1 : -1), std::max<int64_t>(rank, 1)));
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (dim < axis)
      outer *= x->shape[dim];
    else if (dim == axis || coerce)
      n *= x->shape[dim];
    else
      inner *= x->shape[dim];
  }
  Value out = MakeValue(x->dtype, x->shape);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      auto at = [&](int64_t k) { return x->data[base + k * inner]; };
      double max = -HUGE_VAL;
      int64_t argmax = 0;
      for (int64_t k = 0; k < n; ++k) {
        if (at(k) > max) {
          max = at(k);
          argmax = k;
        }
      }
      if (kind == SoftmaxKind::kHardmax) {
        if (n > 0) out.data[base + argmax * inner] = 1.0;
        continue;
      }
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) sum += std::exp(at(k) - max);
      for (int64_t k = 0; k < n; ++k) {
        out.data[base + k * inner] = kind == SoftmaxKind::kSoftmax ? std::exp(at(k) - max) / sum
                                                                   : at(k) - max - std::log(sum);
      }
    }
  }
  return Single(std::move(out));
}

/// Mean and population variance of each of `rows` contiguous runs of `n` values.
void RowMoments(const std::vector<double>& data, int64_t rows, int64_t n, std::vector<double>* mean,
                std::vector<double>* var) {
  mean->assign(rows, 0.0);
  var->assign(rows, 0.0);
  for (int64_t row = 0; row < rows; ++row) {
    const double* values = data.data() + row * n;
    double sum = 0;
    for (int64_t k = 0; k < n; ++k) sum += values[k];
    const double m = n > 0 ? sum / static_cast<double>(n) : 0.0;
    double squares = 0;
    for (int64_t k = 0; k < n; ++k) squares += (values[k] - m) * (values[k] - m);
    (*mean)[row] = m;
    (*var)[row] = n > 0 ? squares / static_cast<double>(n) : 0.0;
  }
}

OpResult LayerNormalization(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* scale, ctx.Required(1));
  const Value* bias = ctx.input(2);
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  GTCO_REF_ASSIGN_OR_RETURN(const int64_t axis, ctx.Axis(ctx.Int("axis", -1), rank));
  const double epsilon = ctx.Float("epsilon", static_cast<double>(1e-5f));
  int64_t rows = 1;
  for (int64_t dim = 0; dim < axis; ++dim) rows *= x->shape[dim];
  const int64_t n = NumElements(x->shape) / std::max<int64_t>(rows, 1);
  GTCO_REF_ASSIGN_OR_RETURN(const Shape shape, BroadcastShapes(ctx, {x->shape, scale->shape}));
  if (shape != x->shape) return ctx.Invalid("Scale does not broadcast to X's shape");
  const std::vector<double> gamma = BroadcastData(*scale, x->shape);
  std::vector<double> beta(gamma.size(), 0.0);
  if (bias != nullptr) {
    GTCO_REF_ASSIGN_OR_RETURN(const Shape bias_shape,
                              BroadcastShapes(ctx, {x->shape, bias->shape}));
    if (bias_shape != x->shape) return ctx.Invalid("B does not broadcast to X's shape");
    beta = BroadcastData(*bias, x->shape);
  }
  std::vector<double> mean, var;
  RowMoments(x->data, rows, n, &mean, &var);
  Shape stat_shape = x->shape;
  for (int64_t dim = axis; dim < rank; ++dim) stat_shape[dim] = 1;
  Value y = MakeValue(x->dtype, x->shape);
  Value mean_out = MakeValue(ElemType::kF32, stat_shape);
  Value inv_std_out = MakeValue(ElemType::kF32, stat_shape);
  for (int64_t row = 0; row < rows; ++row) {
    const double inv_std = 1.0 / std::sqrt(var[row] + epsilon);
    mean_out.data[row] = mean[row];
    inv_std_out.data[row] = inv_std;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t index = row * n + k;
      y.data[index] = (x->data[index] - mean[row]) * inv_std * gamma[index] + beta[index];
    }
  }
  return std::vector<Value>{std::move(y), std::move(mean_out), std::move(inv_std_out)};
}

/// Checks that `value` is a 1-D tensor of `size` (the per-channel inputs).
absl::Status CheckChannels(const OpContext& ctx, const Value& value, int64_t size,
                           const char* what) {
  if (value.NumElements() != size) {
    return ctx.Invalid(
        absl::StrCat(what, " has ", value.NumElements(), " values, expected ", size));
  }
  return absl::OkStatus();
}

OpResult BatchNormalization(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  if (x->shape.size() < 2) return ctx.Invalid("X must have a channel dim");
  const int64_t batch = x->shape[0], channels = x->shape[1];
  const int64_t inner = NumElements(x->shape) / std::max<int64_t>(batch * channels, 1);
  std::vector<const Value*> params;
  const char* names[] = {"scale", "B", "input_mean", "input_var"};
  for (int index = 1; index <= 4; ++index) {
    GTCO_REF_ASSIGN_OR_RETURN(const Value* param, ctx.Required(index));
    GTCO_REF_RETURN_IF_ERROR(CheckChannels(ctx, *param, channels, names[index - 1]));
    params.push_back(param);
  }
  const double epsilon = ctx.Float("epsilon", static_cast<double>(1e-5f));
  const double momentum = ctx.Float("momentum", static_cast<double>(0.9f));
  const bool training = ctx.opset() >= 14 && ctx.Int("training_mode", 0) != 0;
  std::vector<double> mean = params[2]->data, var = params[3]->data;
  Value running_mean = MakeValue(params[2]->dtype, {channels});
  Value running_var = MakeValue(params[3]->dtype, {channels});
  if (training) {  // batch statistics over every axis but the channel
    const double count = static_cast<double>(batch * inner);
    for (int64_t c = 0; c < channels; ++c) {
      double sum = 0, squares = 0;
      for (int64_t b = 0; b < batch; ++b) {
        const double* plane = x->data.data() + (b * channels + c) * inner;
        for (int64_t k = 0; k < inner; ++k) sum += plane[k];
      }
      const double m = sum / count;
      for (int64_t b = 0; b < batch; ++b) {
        const double* plane = x->data.data() + (b * channels + c) * inner;
        for (int64_t k = 0; k < inner; ++k) squares += (plane[k] - m) * (plane[k] - m);
      }
      running_mean.data[c] = params[2]->data[c] * momentum + m * (1 - momentum);
      running_var.data[c] = params[3]->data[c] * momentum + squares / count * (1 - momentum);
      mean[c] = m;
      var[c] = squares / count;
    }
  }
  Value y = MakeValue(x->dtype, x->shape);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t c = 0; c < channels; ++c) {
      const double factor = params[0]->data[c] / std::sqrt(var[c] + epsilon);
      const double shift = params[1]->data[c] - mean[c] * factor;
      const int64_t base = (b * channels + c) * inner;
      for (int64_t k = 0; k < inner; ++k) y.data[base + k] = x->data[base + k] * factor + shift;
    }
  }
  std::vector<Value> outputs;
  outputs.push_back(std::move(y));
  if (training) {
    outputs.push_back(std::move(running_mean));
    outputs.push_back(std::move(running_var));
  }
  return outputs;
}

/// Normalizes each of `rows` contiguous runs of `n` values of x and applies per-row or
/// per-channel affine parameters: y = (x - mean) / sqrt(var + eps) * scale_of(row, k) + ...
template <typename Affine>
Value NormalizeRows(const Value& x, int64_t rows, int64_t n, double epsilon, Affine affine) {
  std::vector<double> mean, var;
  RowMoments(x.data, rows, n, &mean, &var);
  Value y = MakeValue(x.dtype, x.shape);
  for (int64_t row = 0; row < rows; ++row) {
    const double inv_std = 1.0 / std::sqrt(var[row] + epsilon);
    for (int64_t k = 0; k < n; ++k) {
      const int64_t index = row * n + k;
      y.data[index] = affine(row, k, (x.data[index] - mean[row]) * inv_std);
    }
  }
  return y;
}

OpResult InstanceNormalization(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* scale, ctx.Required(1));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* bias, ctx.Required(2));
  if (x->shape.size() < 2) return ctx.Invalid("X must have a channel dim");
  const int64_t channels = x->shape[1];
  GTCO_REF_RETURN_IF_ERROR(CheckChannels(ctx, *scale, channels, "scale"));
  GTCO_REF_RETURN_IF_ERROR(CheckChannels(ctx, *bias, channels, "B"));
  const int64_t rows = x->shape[0] * channels;
  const int64_t n = rows == 0 ? 0 : NumElements(x->shape) / rows;
  const double epsilon = ctx.Float("epsilon", static_cast<double>(1e-5f));
  return Single(NormalizeRows(*x, rows, n, epsilon, [&](int64_t row, int64_t, double v) {
    const int64_t c = row % channels;
    return v * scale->data[c] + bias->data[c];
  }));
}

OpResult GroupNormalization(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* scale, ctx.Required(1));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* bias, ctx.Required(2));
  if (x->shape.size() < 2) return ctx.Invalid("X must have a channel dim");
  const int64_t channels = x->shape[1];
  const int64_t groups = ctx.Int("num_groups", 0);
  if (groups <= 0 || channels % groups != 0) {
    return ctx.Invalid(
        absl::StrCat("num_groups ", groups, " does not divide ", channels, " channels"));
  }
  // Opset 18 gives one scale and bias per group, opset 21 one per channel.
  const int64_t per = scale->NumElements();
  if ((per != groups && per != channels) || bias->NumElements() != per) {
    return ctx.Invalid(absl::StrCat("scale and bias need ", groups, " (per group) or ", channels,
                                    " (per channel) values"));
  }
  const bool per_channel = per == channels;
  const int64_t rows = x->shape[0] * groups;
  const int64_t n = rows == 0 ? 0 : NumElements(x->shape) / rows;
  const int64_t plane = n / (channels / groups);
  const double epsilon = ctx.Float("epsilon", static_cast<double>(1e-5f));
  return Single(NormalizeRows(*x, rows, n, epsilon, [&](int64_t row, int64_t k, double v) {
    const int64_t group = row % groups;
    const int64_t index = per_channel ? group * (channels / groups) + k / plane : group;
    return v * scale->data[index] + bias->data[index];
  }));
}

OpResult LpNormalization(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  GTCO_REF_ASSIGN_OR_RETURN(const int64_t axis, ctx.Axis(ctx.Int("axis", -1), rank));
  const int64_t p = ctx.Int("p", 2);
  if (p != 1 && p != 2) return ctx.Unsupported(absl::StrCat("p=", p));
  int64_t outer = 1, inner = 1;
  for (int64_t dim = 0; dim < axis; ++dim) outer *= x->shape[dim];
  for (int64_t dim = axis + 1; dim < rank; ++dim) inner *= x->shape[dim];
  const int64_t n = x->shape[axis];
  Value out = MakeValue(x->dtype, x->shape);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      double norm = 0;
      for (int64_t k = 0; k < n; ++k) {
        const double v = x->data[base + k * inner];
        norm += p == 1 ? std::fabs(v) : v * v;
      }
      if (p == 2) norm = std::sqrt(norm);
      for (int64_t k = 0; k < n; ++k) out.data[base + k * inner] = x->data[base + k * inner] / norm;
    }
  }
  return Single(std::move(out));
}

OpResult MeanVarianceNormalization(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  GTCO_REF_ASSIGN_OR_RETURN(const std::vector<int64_t> axes,
                            ctx.Axes(ctx.Ints("axes", {0, 2, 3}), rank));
  // Move the normalized axes last, normalize contiguous rows, move them back.
  std::vector<int64_t> perm;
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (std::find(axes.begin(), axes.end(), dim) == axes.end()) perm.push_back(dim);
  }
  const size_t kept = perm.size();
  std::vector<int64_t> sorted_axes = axes;
  std::sort(sorted_axes.begin(), sorted_axes.end());
  perm.insert(perm.end(), sorted_axes.begin(), sorted_axes.end());
  const Value moved = TransposeValue(*x, perm);
  int64_t rows = 1;
  for (size_t dim = 0; dim < kept; ++dim) rows *= moved.shape[dim];
  const int64_t n = rows == 0 ? 0 : moved.NumElements() / rows;
  std::vector<double> mean, var;
  RowMoments(moved.data, rows, n, &mean, &var);
  Value normalized = MakeValue(x->dtype, moved.shape);
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t k = 0; k < n; ++k) {
      normalized.data[row * n + k] =
          (moved.data[row * n + k] - mean[row]) / (std::sqrt(var[row]) + 1e-9);
    }
  }
  std::vector<int64_t> inverse(rank);
  for (int64_t dim = 0; dim < rank; ++dim) inverse[perm[dim]] = dim;
  return Single(TransposeValue(normalized, inverse));
}

/// LRN across channels: y = x / (bias + alpha / size * sum of x^2 over the channel window)^beta.
OpResult Lrn(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  if (x->shape.size() < 2) return ctx.Invalid("X must be (N, C, ...)");
  const int64_t size = ctx.Int("size", 0);
  if (size <= 0) return ctx.Invalid("size must be positive");
  const double alpha = ctx.Float("alpha", static_cast<double>(1e-4f));
  const double beta = ctx.Float("beta", static_cast<double>(0.75f));
  const double bias = ctx.Float("bias", 1.0);
  const int64_t batch = x->shape[0], channels = x->shape[1];
  const int64_t inner = batch * channels == 0 ? 0 : x->NumElements() / (batch * channels);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  Value out = MakeValue(x->dtype, x->shape);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t first = std::max<int64_t>(0, c - before);
      const int64_t last = std::min<int64_t>(channels - 1, c + after);
      for (int64_t i = 0; i < inner; ++i) {
        double squares = 0;
        for (int64_t k = first; k <= last; ++k) {
          const double v = x->data[(n * channels + k) * inner + i];
          squares += v * v;
        }
        const int64_t index = (n * channels + c) * inner + i;
        out.data[index] = x->data[index] / std::pow(bias + alpha / size * squares, beta);
      }
    }
  }
  return Single(std::move(out));
}

}  // namespace

void AddNormalizationOps(OpTable* t) {
  (*t)["Softmax"] = [](const OpContext& c) { return SoftmaxLike(c, SoftmaxKind::kSoftmax); };
  (*t)["LogSoftmax"] = [](const OpContext& c) { return SoftmaxLike(c, SoftmaxKind::kLogSoftmax); };
  (*t)["Hardmax"] = [](const OpContext& c) { return SoftmaxLike(c, SoftmaxKind::kHardmax); };
  (*t)["LayerNormalization"] = LayerNormalization;
  (*t)["BatchNormalization"] = BatchNormalization;
  (*t)["InstanceNormalization"] = InstanceNormalization;
  (*t)["GroupNormalization"] = GroupNormalization;
  (*t)["LpNormalization"] = LpNormalization;
  (*t)["MeanVarianceNormalization"] = MeanVarianceNormalization;
  (*t)["LRN"] = Lrn;
}

}  // namespace gtco::runtime::reference::internal
