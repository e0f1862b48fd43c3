// Reference ONNX convolutions and pooling: Conv, ConvInteger, QLinearConv, ConvTranspose,
// MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool over 1 to 3 spatial dims. Spatial dims
// are handled as three (missing leading ones of size 1), and the innermost loops run over
// contiguous rows.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/reference_ops_internal.h"

namespace gtco::runtime::reference::internal {
namespace {

constexpr int kDims = 3;  // spatial dims as computed: depth, height, width

/// floor(a / b) for b > 0 and any sign of a.
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t CeilDiv(int64_t a, int64_t b) { return -FloorDiv(-a, b); }

/// The window of a conv or pool along the 3 computed spatial dims.
struct Window {
  int64_t in[kDims] = {1, 1, 1};
  int64_t out[kDims] = {1, 1, 1};
  int64_t kernel[kDims] = {1, 1, 1};
  int64_t stride[kDims] = {1, 1, 1};
  int64_t dilation[kDims] = {1, 1, 1};
  int64_t pad_begin[kDims] = {0, 0, 0};
  int64_t pad_end[kDims] = {0, 0, 0};
};

/// The computed dim of spatial dim `s` of `spatial`.
int Dim(int64_t spatial, int64_t s) { return static_cast<int>(kDims - spatial + s); }

/// The window's input, kernel, strides and dilations (output and pads still unset) for input
/// (N, C, spatial...) of `x_shape` and `kernel`; `pads` gets the "pads" attribute.
absl::StatusOr<Window> BaseWindow(const OpContext& ctx, const Shape& x_shape, const Shape& kernel,
                                  std::vector<int64_t>* pads) {
  const int64_t spatial = static_cast<int64_t>(x_shape.size()) - 2;
  if (spatial < 1 || spatial > kDims) {
    return ctx.Unsupported(absl::StrCat("input rank ", x_shape.size(), " (1 to 3 spatial dims)"));
  }
  if (static_cast<int64_t>(kernel.size()) != spatial) {
    return ctx.Invalid(absl::StrCat("kernel shape ", ShapeText(kernel), " does not match input ",
                                    ShapeText(x_shape)));
  }
  const std::vector<int64_t> strides = ctx.Ints("strides", Shape(spatial, 1));
  const std::vector<int64_t> dilations = ctx.Ints("dilations", Shape(spatial, 1));
  *pads = ctx.Ints("pads", Shape(2 * spatial, 0));
  if (static_cast<int64_t>(strides.size()) != spatial ||
      static_cast<int64_t>(dilations.size()) != spatial ||
      static_cast<int64_t>(pads->size()) != 2 * spatial) {
    return ctx.Invalid("strides, dilations or pads do not match the spatial rank");
  }
  const std::string auto_pad = ctx.String("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER") {
    return ctx.Unsupported(absl::StrCat("auto_pad='", auto_pad, "'"));
  }
  Window w;
  for (int64_t s = 0; s < spatial; ++s) {
    const int d = Dim(spatial, s);
    w.in[d] = x_shape[2 + s];
    w.kernel[d] = kernel[s];
    w.stride[d] = strides[s];
    w.dilation[d] = dilations[s];
    if (w.stride[d] <= 0 || w.dilation[d] <= 0 || w.kernel[d] <= 0) {
      return ctx.Invalid("strides, dilations and kernel dims must be positive");
    }
  }
  return w;
}

/// The window of a conv or pool over input (N, C, spatial...) of `x_shape` with `kernel`: output
/// size and pads from the pads and auto_pad attributes; pools pass `ceil_mode`.
absl::StatusOr<Window> MakeWindow(const OpContext& ctx, const Shape& x_shape, const Shape& kernel,
                                  bool ceil_mode) {
  std::vector<int64_t> pads;
  GTCO_REF_ASSIGN_OR_RETURN(Window w, BaseWindow(ctx, x_shape, kernel, &pads));
  const std::string auto_pad = ctx.String("auto_pad", "NOTSET");
  const int64_t spatial = static_cast<int64_t>(x_shape.size()) - 2;
  for (int64_t s = 0; s < spatial; ++s) {
    const int d = Dim(spatial, s);
    const int64_t span = (w.kernel[d] - 1) * w.dilation[d] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      w.out[d] = CeilDiv(w.in[d], w.stride[d]);
      const int64_t total = std::max<int64_t>(0, (w.out[d] - 1) * w.stride[d] + span - w.in[d]);
      w.pad_begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pad_end[d] = total - w.pad_begin[d];
      continue;
    }
    if (auto_pad == "NOTSET") {
      w.pad_begin[d] = pads[s];
      w.pad_end[d] = pads[spatial + s];
    }
    const int64_t room = w.in[d] + w.pad_begin[d] + w.pad_end[d] - span;
    w.out[d] = (ceil_mode ? CeilDiv(room, w.stride[d]) : FloorDiv(room, w.stride[d])) + 1;
    // Ceil mode drops a last window that would start in the end padding.
    if (ceil_mode && (w.out[d] - 1) * w.stride[d] >= w.in[d] + w.pad_begin[d]) --w.out[d];
    if (w.out[d] < 0) w.out[d] = 0;
  }
  return w;
}

/// The output positions [lo, hi) along one dim whose input position o * stride + offset lies in
/// [0, in).
void ValidRange(int64_t offset, int64_t stride, int64_t in, int64_t out, int64_t* lo, int64_t* hi) {
  *lo = std::max<int64_t>(0, CeilDiv(-offset, stride));
  *hi = std::min<int64_t>(out, FloorDiv(in - 1 - offset, stride) + 1);
  if (*hi < *lo) *hi = *lo;
}

/// Conv: out_plane[o] += weight * in_plane[o * stride + k * dilation - pad] for one kernel
/// position k (3 dims) over all valid o.
void ConvAccumulate(const Window& w, const int64_t k[kDims], double weight, const double* in,
                    double* out) {
  int64_t lo[kDims], hi[kDims], offset[kDims];
  for (int d = 0; d < kDims; ++d) {
    offset[d] = k[d] * w.dilation[d] - w.pad_begin[d];
    ValidRange(offset[d], w.stride[d], w.in[d], w.out[d], &lo[d], &hi[d]);
  }
  const int64_t sx = w.stride[2];
  const bool merge_rows = sx == 1 && w.stride[1] == 1 && lo[2] == 0 && hi[2] == w.out[2] &&
                          w.out[2] == w.in[2] && offset[2] == 0;
  for (int64_t oz = lo[0]; oz < hi[0]; ++oz) {
    const int64_t iz = oz * w.stride[0] + offset[0];
    if (merge_rows) {  // whole rows on both sides: one contiguous run
      const double* src = in + (iz * w.in[1] + lo[1] + offset[1]) * w.in[2];
      double* dst = out + (oz * w.out[1] + lo[1]) * w.out[2];
      const int64_t count = (hi[1] - lo[1]) * w.out[2];
      for (int64_t i = 0; i < count; ++i) dst[i] += weight * src[i];
      continue;
    }
    for (int64_t oy = lo[1]; oy < hi[1]; ++oy) {
      const int64_t iy = oy * w.stride[1] + offset[1];
      const double* src = in + (iz * w.in[1] + iy) * w.in[2] + lo[2] * sx + offset[2];
      double* dst = out + (oz * w.out[1] + oy) * w.out[2] + lo[2];
      const int64_t count = hi[2] - lo[2];
      if (sx == 1) {
        for (int64_t i = 0; i < count; ++i) dst[i] += weight * src[i];
      } else {
        for (int64_t i = 0; i < count; ++i) dst[i] += weight * src[i * sx];
      }
    }
  }
}

/// ConvTranspose: out_plane[i * stride + k * dilation - pad] += weight * in_plane[i] for one
/// kernel position k over all input positions i that land in the output.
void ConvTransposeAccumulate(const Window& w, const int64_t k[kDims], double weight,
                             const double* in, double* out) {
  int64_t lo[kDims], hi[kDims], offset[kDims];
  for (int d = 0; d < kDims; ++d) {
    offset[d] = k[d] * w.dilation[d] - w.pad_begin[d];
    ValidRange(offset[d], w.stride[d], w.out[d], w.in[d], &lo[d], &hi[d]);
  }
  const int64_t sx = w.stride[2];
  for (int64_t iz = lo[0]; iz < hi[0]; ++iz) {
    const int64_t oz = iz * w.stride[0] + offset[0];
    for (int64_t iy = lo[1]; iy < hi[1]; ++iy) {
      const int64_t oy = iy * w.stride[1] + offset[1];
      const double* src = in + (iz * w.in[1] + iy) * w.in[2] + lo[2];
      double* dst = out + (oz * w.out[1] + oy) * w.out[2] + lo[2] * sx + offset[2];
      const int64_t count = hi[2] - lo[2];
      for (int64_t i = 0; i < count; ++i) dst[i * sx] += weight * src[i];
    }
  }
}

int64_t PlaneSize(const int64_t dims[kDims]) { return dims[0] * dims[1] * dims[2]; }

/// The output shape [N, M, out spatial...] of a window over `x_shape`.
Shape OutShape(const Shape& x_shape, int64_t channels, const Window& w) {
  Shape shape = {x_shape[0], channels};
  const int64_t spatial = static_cast<int64_t>(x_shape.size()) - 2;
  for (int64_t s = 0; s < spatial; ++s) shape.push_back(w.out[kDims - spatial + s]);
  return shape;
}

/// Checks the shared Conv/ConvTranspose inputs: X and W of the same rank, B of `out_channels`.
absl::Status CheckConvInputs(const OpContext& ctx, const Value& x, const Value& weights,
                             const Value* bias, int64_t out_channels) {
  if (x.shape.size() < 3 || weights.shape.size() != x.shape.size()) {
    return ctx.Invalid(absl::StrCat("X ", ShapeText(x.shape), " and W ", ShapeText(weights.shape),
                                    " must be (N, C, spatial...) and (M, C/group, kernel...)"));
  }
  if (bias != nullptr && bias->NumElements() != out_channels) {
    return ctx.Invalid(absl::StrCat("B has ", bias->NumElements(), " values for ", out_channels,
                                    " output channels"));
  }
  const Shape kernel(weights.shape.begin() + 2, weights.shape.end());
  if (ctx.HasAttr("kernel_shape") && ctx.Ints("kernel_shape") != kernel) {
    return ctx.Invalid("kernel_shape does not match W");
  }
  return absl::OkStatus();
}

/// Conv of x with weights (and bias, may be null) into an `out_type` tensor.
absl::StatusOr<Value> ConvValues(const OpContext& ctx, const Value& x, const Value& weights,
                                 const Value* bias, ElemType out_type) {
  const int64_t out_channels = weights.shape.empty() ? 0 : weights.shape[0];
  GTCO_REF_RETURN_IF_ERROR(CheckConvInputs(ctx, x, weights, bias, out_channels));
  const int64_t group = ctx.Int("group", 1);
  const int64_t in_channels = x.shape[1], group_in = weights.shape[1];
  if (group <= 0 || in_channels != group * group_in || out_channels % group != 0) {
    return ctx.Invalid(absl::StrCat("X has ", in_channels, " channels, W ",
                                    ShapeText(weights.shape), ", group ", group));
  }
  const Shape kernel(weights.shape.begin() + 2, weights.shape.end());
  GTCO_REF_ASSIGN_OR_RETURN(const Window w, MakeWindow(ctx, x.shape, kernel, false));
  Value out = MakeValue(out_type, OutShape(x.shape, out_channels, w));
  const int64_t in_plane = PlaneSize(w.in), out_plane = PlaneSize(w.out);
  const int64_t kernel_size = PlaneSize(w.kernel), group_out = out_channels / group;
  for (int64_t n = 0; n < x.shape[0]; ++n) {
    for (int64_t m = 0; m < out_channels; ++m) {
      double* dst = out.data.data() + (n * out_channels + m) * out_plane;
      if (bias != nullptr) std::fill(dst, dst + out_plane, bias->data[m]);
      const int64_t g = m / group_out;
      for (int64_t c = 0; c < group_in; ++c) {
        const double* src = x.data.data() + (n * in_channels + g * group_in + c) * in_plane;
        const double* filter = weights.data.data() + (m * group_in + c) * kernel_size;
        int64_t k[kDims];
        for (k[0] = 0; k[0] < w.kernel[0]; ++k[0]) {
          for (k[1] = 0; k[1] < w.kernel[1]; ++k[1]) {
            for (k[2] = 0; k[2] < w.kernel[2]; ++k[2]) {
              const double weight = filter[(k[0] * w.kernel[1] + k[1]) * w.kernel[2] + k[2]];
              ConvAccumulate(w, k, weight, src, dst);
            }
          }
        }
      }
    }
  }
  return out;
}

OpResult Conv(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* weights, ctx.Required(1));
  GTCO_REF_ASSIGN_OR_RETURN(Value out, ConvValues(ctx, *x, *weights, ctx.input(2), x->dtype));
  return Single(std::move(out));
}

/// `value` minus its zero point: a scalar, or (`per_channel`) one per entry of dim 0.
absl::StatusOr<Value> Shifted(const OpContext& ctx, const Value& value, const Value* zero,
                              bool per_channel, const char* what) {
  Value shifted = value;
  if (zero == nullptr) return shifted;
  const int64_t channels = value.shape.empty() ? 1 : value.shape[0];
  if (zero->NumElements() != 1 && !(per_channel && zero->NumElements() == channels)) {
    return ctx.Invalid(
        absl::StrCat(what, " must be a scalar", per_channel ? " or per channel" : ""));
  }
  const int64_t inner = channels == 0 ? 0 : value.NumElements() / channels;
  for (size_t index = 0; index < shifted.data.size(); ++index) {
    shifted.data[index] -= zero->data[zero->NumElements() == 1 ? 0 : index / inner];
  }
  return shifted;
}

OpResult ConvInteger(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* weights, ctx.Required(1));
  GTCO_REF_ASSIGN_OR_RETURN(const Value lhs, Shifted(ctx, *x, ctx.input(2), false, "x_zero_point"));
  GTCO_REF_ASSIGN_OR_RETURN(const Value rhs,
                            Shifted(ctx, *weights, ctx.input(3), true, "w_zero_point"));
  GTCO_REF_ASSIGN_OR_RETURN(Value out, ConvValues(ctx, lhs, rhs, nullptr, ElemType::kI32));
  return Single(std::move(out));
}

/// QLinearConv: the integer conv of the shifted operands (plus the i32 bias), requantized to y's
/// scale and zero point.
OpResult QLinearConv(const OpContext& ctx) {
  const Value* in[8];
  for (int index = 0; index < 8; ++index) {
    if (index == 7 && ctx.input(7) == nullptr) {
      in[7] = nullptr;
      continue;
    }
    GTCO_REF_ASSIGN_OR_RETURN(in[index], ctx.Required(index));
  }
  const Value &x = *in[0], &x_scale = *in[1], &w = *in[3], &w_scale = *in[4], &y_scale = *in[6];
  GTCO_REF_ASSIGN_OR_RETURN(const Value lhs, Shifted(ctx, x, in[2], false, "x_zero_point"));
  GTCO_REF_ASSIGN_OR_RETURN(const Value rhs, Shifted(ctx, w, in[5], true, "w_zero_point"));
  GTCO_REF_ASSIGN_OR_RETURN(Value acc, ConvValues(ctx, lhs, rhs, ctx.input(8), ElemType::kI32));
  const int64_t channels = acc.shape[1];
  if (x_scale.NumElements() != 1 || y_scale.NumElements() != 1 ||
      (w_scale.NumElements() != 1 && w_scale.NumElements() != channels)) {
    return ctx.Invalid("x_scale and y_scale must be scalars, w_scale scalar or per channel");
  }
  const Value* y_zero = in[7];
  const ElemType type = y_zero != nullptr ? y_zero->dtype : ElemType::kU8;
  const double lo = type == ElemType::kI8 ? -128 : 0, hi = type == ElemType::kI8 ? 127 : 255;
  const int64_t plane = acc.NumElements() / std::max<int64_t>(acc.shape[0] * channels, 1);
  Value out = MakeValue(type, acc.shape);
  for (size_t index = 0; index < acc.data.size(); ++index) {
    const int64_t m = static_cast<int64_t>(index) / plane % channels;
    // The multiplier in f32 as the ONNX reference computes it: x_scale * w_scale / y_scale.
    const double multiplier =
        RoundTo(ElemType::kF32,
                RoundTo(ElemType::kF32,
                        x_scale.data[0] * w_scale.data[w_scale.NumElements() == 1 ? 0 : m]) /
                    y_scale.data[0]);
    const double q = std::nearbyint(acc.data[index] * multiplier);
    out.data[index] = std::clamp(q + (y_zero != nullptr ? y_zero->data[0] : 0.0), lo, hi);
  }
  return Single(std::move(out));
}

/// ConvTranspose's window: pads from the attributes, or from output_shape / auto_pad (total
/// padding = stride * (in - 1) + output_padding + span - out; SAME_UPPER puts the smaller half
/// first, NOTSET and SAME_LOWER the larger).
absl::StatusOr<Window> TransposeWindow(const OpContext& ctx, const Shape& x_shape,
                                       const Shape& kernel) {
  std::vector<int64_t> pads;
  GTCO_REF_ASSIGN_OR_RETURN(Window w, BaseWindow(ctx, x_shape, kernel, &pads));
  const int64_t spatial = static_cast<int64_t>(x_shape.size()) - 2;
  const std::vector<int64_t> output_padding = ctx.Ints("output_padding", Shape(spatial, 0));
  std::vector<int64_t> output_shape = ctx.Ints("output_shape");
  if (static_cast<int64_t>(output_shape.size()) == spatial + 2) {  // the whole shape
    output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  }
  if (static_cast<int64_t>(output_padding.size()) != spatial ||
      (!output_shape.empty() && static_cast<int64_t>(output_shape.size()) != spatial)) {
    return ctx.Invalid("output_padding or output_shape do not match the spatial rank");
  }
  const std::string auto_pad = ctx.String("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  for (int64_t s = 0; s < spatial; ++s) {
    const int d = Dim(spatial, s);
    const int64_t full =
        w.stride[d] * (w.in[d] - 1) + output_padding[s] + (w.kernel[d] - 1) * w.dilation[d] + 1;
    if (!output_shape.empty() || same) {
      w.out[d] = !output_shape.empty() ? output_shape[s] : w.in[d] * w.stride[d];
      const int64_t total = full - w.out[d];
      const int64_t half = FloorDiv(total, 2);
      w.pad_begin[d] = auto_pad == "SAME_UPPER" ? half : total - half;
      w.pad_end[d] = total - w.pad_begin[d];
    } else {
      if (auto_pad == "NOTSET") {
        w.pad_begin[d] = pads[s];
        w.pad_end[d] = pads[spatial + s];
      }
      w.out[d] = full - w.pad_begin[d] - w.pad_end[d];
    }
    if (w.out[d] < 0) return ctx.Invalid("the output would be empty");
  }
  return w;
}

OpResult ConvTranspose(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const Value* weights, ctx.Required(1));
  const Value* bias = ctx.input(2);
  const int64_t group = ctx.Int("group", 1);
  const int64_t group_out = weights->shape.size() >= 2 ? weights->shape[1] : 0;
  const int64_t out_channels = group_out * group;
  GTCO_REF_RETURN_IF_ERROR(CheckConvInputs(ctx, *x, *weights, bias, out_channels));
  const int64_t in_channels = x->shape[1];
  if (group <= 0 || weights->shape[0] != in_channels || in_channels % group != 0) {
    return ctx.Invalid(absl::StrCat("X has ", in_channels, " channels, W ",
                                    ShapeText(weights->shape), ", group ", group));
  }
  const Shape kernel(weights->shape.begin() + 2, weights->shape.end());
  GTCO_REF_ASSIGN_OR_RETURN(const Window w, TransposeWindow(ctx, x->shape, kernel));
  Value out = MakeValue(x->dtype, OutShape(x->shape, out_channels, w));
  const int64_t in_plane = PlaneSize(w.in), out_plane = PlaneSize(w.out);
  const int64_t kernel_size = PlaneSize(w.kernel), group_in = in_channels / group;
  for (int64_t n = 0; n < x->shape[0]; ++n) {
    for (int64_t m = 0; m < out_channels; ++m) {
      double* dst = out.data.data() + (n * out_channels + m) * out_plane;
      if (bias != nullptr) std::fill(dst, dst + out_plane, bias->data[m]);
      const int64_t g = m / group_out, m_in_group = m % group_out;
      for (int64_t c = g * group_in; c < (g + 1) * group_in; ++c) {
        const double* src = x->data.data() + (n * in_channels + c) * in_plane;
        const double* filter = weights->data.data() + (c * group_out + m_in_group) * kernel_size;
        int64_t k[kDims];
        for (k[0] = 0; k[0] < w.kernel[0]; ++k[0]) {
          for (k[1] = 0; k[1] < w.kernel[1]; ++k[1]) {
            for (k[2] = 0; k[2] < w.kernel[2]; ++k[2]) {
              const double weight = filter[(k[0] * w.kernel[1] + k[1]) * w.kernel[2] + k[2]];
              ConvTransposeAccumulate(w, k, weight, src, dst);
            }
          }
        }
      }
    }
  }
  return Single(std::move(out));
}

enum class PoolKind { kMax, kAverage };

/// What one pooling window at output position `pos` covers of one input plane.
struct WindowStats {
  double max = -HUGE_VAL;
  double sum = 0;
  int64_t max_index = -1;    ///< in the plane, row-major (or column-major: `column_major`)
  int64_t count = 0;         ///< input elements inside the window
  int64_t padded_count = 1;  ///< window positions inside the padded input
};

WindowStats PoolWindow(const Window& w, const int64_t pos[kDims], const double* plane,
                       bool column_major) {
  WindowStats stats;
  for (int d = 0; d < kDims; ++d) {
    int64_t inside = 0;
    for (int64_t k = 0; k < w.kernel[d]; ++k) {
      const int64_t i = pos[d] * w.stride[d] + k * w.dilation[d] - w.pad_begin[d];
      if (i >= -w.pad_begin[d] && i < w.in[d] + w.pad_end[d]) ++inside;
    }
    stats.padded_count *= inside;
  }
  for (int64_t kz = 0; kz < w.kernel[0]; ++kz) {
    const int64_t iz = pos[0] * w.stride[0] + kz * w.dilation[0] - w.pad_begin[0];
    if (iz < 0 || iz >= w.in[0]) continue;
    for (int64_t ky = 0; ky < w.kernel[1]; ++ky) {
      const int64_t iy = pos[1] * w.stride[1] + ky * w.dilation[1] - w.pad_begin[1];
      if (iy < 0 || iy >= w.in[1]) continue;
      for (int64_t kx = 0; kx < w.kernel[2]; ++kx) {
        const int64_t ix = pos[2] * w.stride[2] + kx * w.dilation[2] - w.pad_begin[2];
        if (ix < 0 || ix >= w.in[2]) continue;
        const int64_t index = (iz * w.in[1] + iy) * w.in[2] + ix;
        const double value = plane[index];
        stats.sum += value;
        ++stats.count;
        if (value > stats.max || stats.max_index < 0) {
          stats.max = value;
          stats.max_index = column_major ? iz + w.in[0] * (iy + w.in[1] * ix) : index;
        }
      }
    }
  }
  return stats;
}

/// MaxPool (values and Indices) or AveragePool.
OpResult Pool(const OpContext& ctx, PoolKind kind) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  if (x->shape.size() < 3) return ctx.Invalid("X must be (N, C, spatial...)");
  if (!ctx.HasAttr("kernel_shape")) return ctx.Invalid("kernel_shape is required");
  const bool column_major = ctx.Int("storage_order", 0) != 0;  // of MaxPool's Indices
  const bool ceil_mode = ctx.Int("ceil_mode", 0) != 0;
  GTCO_REF_ASSIGN_OR_RETURN(const Window w,
                            MakeWindow(ctx, x->shape, ctx.Ints("kernel_shape"), ceil_mode));
  const bool include_pad = ctx.Int("count_include_pad", 0) != 0;
  const int64_t planes = x->shape[0] * x->shape[1];
  const int64_t in_plane = PlaneSize(w.in), out_plane = PlaneSize(w.out);
  Value out = MakeValue(x->dtype, OutShape(x->shape, x->shape[1], w));
  Value indices = MakeValue(ElemType::kI64, out.shape);
  for (int64_t plane = 0; plane < planes; ++plane) {
    for (int64_t o = 0; o < out_plane; ++o) {
      const int64_t pos[kDims] = {o / (w.out[1] * w.out[2]), o / w.out[2] % w.out[1], o % w.out[2]};
      const WindowStats stats = PoolWindow(w, pos, x->data.data() + plane * in_plane, column_major);
      const int64_t flat = plane * out_plane + o;
      if (kind == PoolKind::kMax) {
        out.data[flat] = stats.max;
        indices.data[flat] = static_cast<double>(plane * in_plane + stats.max_index);
      } else {
        const int64_t divisor = include_pad ? stats.padded_count : stats.count;
        out.data[flat] = divisor > 0 ? stats.sum / static_cast<double>(divisor) : NAN;
      }
    }
  }
  std::vector<Value> outputs;
  outputs.push_back(std::move(out));
  if (kind == PoolKind::kMax) outputs.push_back(std::move(indices));
  return outputs;
}

OpResult GlobalPool(const OpContext& ctx, PoolKind kind) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  if (x->shape.size() < 2) return ctx.Invalid("X must be (N, C, spatial...)");
  Shape out_shape = x->shape;
  for (size_t dim = 2; dim < out_shape.size(); ++dim) out_shape[dim] = 1;
  Value out = MakeValue(x->dtype, out_shape);
  const int64_t planes = x->shape[0] * x->shape[1];
  const int64_t size = planes == 0 ? 0 : x->NumElements() / planes;
  for (int64_t plane = 0; plane < planes; ++plane) {
    const double* src = x->data.data() + plane * size;
    double acc = kind == PoolKind::kMax ? -HUGE_VAL : 0.0;
    for (int64_t i = 0; i < size; ++i)
      acc = kind == PoolKind::kMax ? std::max(acc, src[i]) : acc + src[i];
    out.data[plane] = kind == PoolKind::kMax ? acc : acc / static_cast<double>(size);
  }
  return Single(std::move(out));
}

}  // namespace

void AddConvOps(OpTable* t) {
  (*t)["Conv"] = Conv;
  (*t)["ConvInteger"] = ConvInteger;
  (*t)["QLinearConv"] = QLinearConv;
  (*t)["ConvTranspose"] = ConvTranspose;
  (*t)["MaxPool"] = [](const OpContext& c) { return Pool(c, PoolKind::kMax); };
  (*t)["AveragePool"] = [](const OpContext& c) { return Pool(c, PoolKind::kAverage); };
  (*t)["GlobalMaxPool"] = [](const OpContext& c) { return GlobalPool(c, PoolKind::kMax); };
  (*t)["GlobalAveragePool"] = [](const OpContext& c) { return GlobalPool(c, PoolKind::kAverage); };
}

}  // namespace gtco::runtime::reference::internal
