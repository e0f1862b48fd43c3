// Reference ONNX Resize (opsets 10-19: nearest, linear and cubic, every coordinate transformation
// mode, antialias, axes, keep_aspect_ratio_policy) and the deprecated Upsample, computed as the
// ONNX reference implementation computes them: one axis at a time, innermost first.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/reference_ops_internal.h"

namespace gtco::runtime::reference::internal {
namespace {

/// How to resize, shared by all axes.
struct ResizeMode {
  std::string mode = "nearest";  ///< nearest | linear | cubic
  std::string coordinates = "half_pixel";
  std::string nearest = "round_prefer_floor";  ///< or "simple" (opset < 11)
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation = 0.0;
};

/// One axis: each output position's input taps (index, weight), or none (the extrapolation
/// value).
struct AxisTaps {
  std::vector<std::vector<std::pair<int64_t, double>>> taps;
  std::vector<bool> extrapolate;
};

/// The source coordinate of output position `x`, or false when it lies outside the crop
/// (tf_crop_and_resize).
bool SourceCoordinate(const ResizeMode& m, double x, int64_t in, int64_t out, double scale,
                      double roi_start, double roi_end, double* x_ori) {
  const double out_width = scale * static_cast<double>(in);
  const double in_width = static_cast<double>(in);
  const std::string& c = m.coordinates;
  if (c == "align_corners") {
    *x_ori = out_width == 1 ? 0.0 : x * (in_width - 1) / (out_width - 1);
  } else if (c == "asymmetric") {
    *x_ori = x / scale;
  } else if (c == "tf_crop_and_resize") {
    *x_ori = out_width == 1 ? (roi_end - roi_start) * (in_width - 1) / 2
                            : x * (roi_end - roi_start) * (in_width - 1) / (out_width - 1);
    *x_ori += roi_start * (in_width - 1);
    if (*x_ori < 0 || *x_ori > in_width - 1) return false;
  } else if (c == "pytorch_half_pixel") {
    *x_ori = out_width == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  } else if (c == "half_pixel_symmetric") {
    const double adjustment = static_cast<double>(out) / out_width;
    const double offset = in_width / 2 * (1 - adjustment);
    *x_ori = offset + (x + 0.5) / scale - 0.5;
  } else if (c == "tf_half_pixel_for_nn") {
    *x_ori = (x + 0.5) / scale;
  } else {  // half_pixel
    *x_ori = (x + 0.5) / scale - 0.5;
  }
  return true;
}

/// The interpolation coefficients for `ratio` in (0, 1] (the reference's get_coeffs): tap i
/// weighs source index floor + (1 - n/2) + i, n the number of coefficients.
std::vector<double> Coefficients(const ResizeMode& m, double ratio, double scale, bool integer) {
  if (m.mode == "nearest") {
    if (integer) return {0, 1};
    const std::string& n = m.nearest;
    bool up = false;
    if (n == "round_prefer_floor")
      up = ratio > 0.5;
    else if (n == "round_prefer_ceil")
      up = ratio >= 0.5;
    else if (n == "floor")
      up = false;
    else if (n == "ceil")
      up = true;
    else
      up = scale < 1;  // "simple" (opset < 11): ceil when downsampling, else floor
    return {up ? 0.0 : 1.0, up ? 1.0 : 0.0};
  }
  const double s = std::min(scale, 1.0);
  std::vector<double> coeffs;
  if (m.mode == "linear") {
    if (!m.antialias) return {1 - ratio, ratio};
    const int64_t start = static_cast<int64_t>(std::floor(-1 / s) + 1);
    for (int64_t i = start; i < start + 2 - 2 * start; ++i) {
      coeffs.push_back(std::clamp(1 - std::fabs((static_cast<double>(i) - ratio) * s), 0.0, 1.0));
    }
  } else {  // cubic
    const double a = m.cubic_a;
    if (!m.antialias) {
      const double r = ratio, q = 1 - ratio;
      return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
              ((a + 2) * r - (a + 3)) * r * r + 1, ((a + 2) * q - (a + 3)) * q * q + 1,
              ((a * (q + 1) - 5 * a) * (q + 1) + 8 * a) * (q + 1) - 4 * a};
    }
    const int64_t start = static_cast<int64_t>(std::floor(-2 / s) + 1);
    for (int64_t i = start; i < 2 - start; ++i) {
      const double x = std::fabs(s * (static_cast<double>(i) - ratio));
      coeffs.push_back(x <= 1  ? ((a + 2) * x - (a + 3)) * x * x + 1
                       : x < 2 ? ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
                               : 0.0);
    }
  }
  double sum = 0;
  for (double c : coeffs) sum += c;
  for (double& c : coeffs) c /= sum;
  return coeffs;
}

AxisTaps PlanAxis(const ResizeMode& m, int64_t in, int64_t out, double scale, double roi_start,
                  double roi_end) {
  AxisTaps plan;
  plan.taps.resize(out);
  plan.extrapolate.assign(out, false);
  for (int64_t x = 0; x < out; ++x) {
    double x_ori = 0;
    if (!SourceCoordinate(m, static_cast<double>(x), in, out, scale, roi_start, roi_end, &x_ori)) {
      plan.extrapolate[x] = true;
      continue;
    }
    const bool integer = x_ori == std::floor(x_ori);
    const int64_t base = static_cast<int64_t>(std::floor(x_ori)) - (integer ? 1 : 0);
    const double ratio = integer ? 1.0 : x_ori - std::floor(x_ori);
    std::vector<double> coeffs = Coefficients(m, ratio, scale, integer);
    const int64_t n = static_cast<int64_t>(coeffs.size());
    const int64_t first = base + 1 - n / 2;
    if (m.exclude_outside) {
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        if (first + i < 0 || first + i >= in) coeffs[i] = 0;
        sum += coeffs[i];
      }
      for (double& c : coeffs) c /= sum;
    }
    for (int64_t i = 0; i < n; ++i) {
      if (coeffs[i] == 0) continue;
      plan.taps[x].emplace_back(std::clamp<int64_t>(first + i, 0, in - 1), coeffs[i]);
    }
  }
  return plan;
}

/// Resizes `value` along `axis` to `out` positions with `plan`.
Value ResizeAxis(const Value& value, int64_t axis, const AxisTaps& plan, double extrapolation) {
  Shape shape = value.shape;
  const int64_t in = shape[axis], out = static_cast<int64_t>(plan.taps.size());
  shape[axis] = out;
  int64_t outer = 1, inner = 1;
  for (int64_t dim = 0; dim < axis; ++dim) outer *= shape[dim];
  for (size_t dim = axis + 1; dim < shape.size(); ++dim) inner *= shape[dim];
  Value result = MakeValue(value.dtype, shape);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t x = 0; x < out; ++x) {
      double* dst = result.data.data() + (o * out + x) * inner;
      if (plan.extrapolate[x]) {
        std::fill(dst, dst + inner, extrapolation);
        continue;
      }
      for (const auto& [index, weight] : plan.taps[x]) {
        const double* src = value.data.data() + (o * in + index) * inner;
        for (int64_t i = 0; i < inner; ++i) dst[i] += weight * src[i];
      }
    }
  }
  return result;
}

/// The taps of each axis `x_shape` is resized along to `sizes` with per-axis `scales` (both of
/// x's rank) and `roi` ([starts, ends] of x's rank, or empty), innermost first; an axis whose
/// taps copy it as it is is left out.
std::vector<std::pair<int64_t, AxisTaps>> PlanAxes(const Shape& x_shape, const ResizeMode& m,
                                                   const Shape& sizes,
                                                   const std::vector<double>& scales,
                                                   const std::vector<double>& roi) {
  std::vector<std::pair<int64_t, AxisTaps>> axes;
  const int64_t rank = static_cast<int64_t>(x_shape.size());
  for (int64_t axis = rank - 1; axis >= 0; --axis) {
    const double start = roi.empty() ? 0.0 : roi[axis];
    const double end = roi.empty() ? 1.0 : roi[rank + axis];
    AxisTaps plan = PlanAxis(m, x_shape[axis], sizes[axis], scales[axis], start, end);
    bool identity = sizes[axis] == x_shape[axis];
    for (int64_t i = 0; identity && i < sizes[axis]; ++i) {
      identity = !plan.extrapolate[i] && plan.taps[i].size() == 1 && plan.taps[i][0].first == i &&
                 plan.taps[i][0].second == 1.0;
    }
    if (!identity) axes.emplace_back(axis, std::move(plan));
  }
  return axes;
}

/// Resizes `x` by PlanAxes' taps, one axis at a time.
Value ResizeAll(const Value& x, const ResizeMode& m, const Shape& sizes,
                const std::vector<double>& scales, const std::vector<double>& roi) {
  Value current = x;
  for (const auto& [axis, plan] : PlanAxes(x.shape, m, sizes, scales, roi)) {
    current = ResizeAxis(current, axis, plan, m.extrapolation);
  }
  return current;
}

/// Resize's mode from its attributes (opset 10: asymmetric, "simple" nearest rounding).
absl::StatusOr<ResizeMode> ModeOf(const OpContext& ctx) {
  ResizeMode m;
  m.mode = ctx.String("mode", "nearest");
  if (ctx.opset() < 11) {
    m.coordinates = "asymmetric";
    m.nearest = "simple";
  } else {
    m.coordinates = ctx.String("coordinate_transformation_mode", "half_pixel");
    m.nearest = ctx.String("nearest_mode", "round_prefer_floor");
    m.cubic_a = ctx.Float("cubic_coeff_a", static_cast<double>(-0.75f));
    m.exclude_outside = ctx.Int("exclude_outside", 0) != 0;
    m.extrapolation = ctx.Float("extrapolation_value", 0.0);
    m.antialias = ctx.Int("antialias", 0) != 0 && m.mode != "nearest";
  }
  if (m.mode == "bilinear") m.mode = "linear";
  if (m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic") {
    return ctx.Unsupported(absl::StrCat("mode='", m.mode, "'"));
  }
  static const char* const kCoordinates[] = {
      "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
      "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (std::find(std::begin(kCoordinates), std::end(kCoordinates), m.coordinates) ==
      std::end(kCoordinates)) {
    return ctx.Unsupported(absl::StrCat("coordinate_transformation_mode='", m.coordinates, "'"));
  }
  static const char* const kNearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil",
                                         "simple"};
  if (std::find(std::begin(kNearest), std::end(kNearest), m.nearest) == std::end(kNearest)) {
    return ctx.Unsupported(absl::StrCat("nearest_mode='", m.nearest, "'"));
  }
  return m;
}

/// The output sizes and per-axis scales of Resize on `x` from its sizes or scales input (over
/// the "axes" attribute's axes), applying keep_aspect_ratio_policy to sizes.
absl::Status TargetOf(const OpContext& ctx, const Shape& x_shape, const std::vector<int64_t>& axes,
                      Shape* sizes, std::vector<double>* scales) {
  const Value* scales_value = ctx.input(ctx.opset() < 11 ? 1 : 2);
  const Value* sizes_value = ctx.opset() < 11 ? nullptr : ctx.input(3);
  if (scales_value != nullptr && scales_value->data.empty()) scales_value = nullptr;
  if (sizes_value != nullptr && sizes_value->data.empty()) sizes_value = nullptr;
  const size_t count = axes.size();
  scales->assign(x_shape.size(), 1.0);
  *sizes = x_shape;
  if (sizes_value == nullptr) {
    if (scales_value == nullptr) return ctx.Invalid("needs scales or sizes");
    if (scales_value->data.size() != count) return ctx.Invalid("scales does not match the axes");
    for (size_t i = 0; i < count; ++i) {
      const double scale = scales_value->data[i];
      if (!(scale > 0)) return ctx.Invalid("scales must be positive");
      (*scales)[axes[i]] = scale;
      (*sizes)[axes[i]] = static_cast<int64_t>(scale * static_cast<double>(x_shape[axes[i]]));
    }
    return absl::OkStatus();
  }
  if (sizes_value->data.size() != count) return ctx.Invalid("sizes does not match the axes");
  for (size_t i = 0; i < count; ++i) {
    if (sizes_value->data[i] < 0) return ctx.Invalid("sizes must not be negative");
    (*sizes)[axes[i]] = ToInt64(sizes_value->data[i]);
    (*scales)[axes[i]] =
        static_cast<double>((*sizes)[axes[i]]) / static_cast<double>(x_shape[axes[i]]);
  }
  const std::string policy = ctx.String("keep_aspect_ratio_policy", "stretch");
  if (policy == "stretch" || axes.empty()) return absl::OkStatus();
  if (policy != "not_larger" && policy != "not_smaller") {
    return ctx.Unsupported(absl::StrCat("keep_aspect_ratio_policy='", policy, "'"));
  }
  double scale = (*scales)[axes[0]];
  for (int64_t axis : axes) {
    scale = policy == "not_larger" ? std::min(scale, (*scales)[axis])
                                   : std::max(scale, (*scales)[axis]);
  }
  for (int64_t axis : axes) {  // rounded half up
    (*scales)[axis] = scale;
    (*sizes)[axis] = static_cast<int64_t>(scale * static_cast<double>(x_shape[axis]) + 0.5);
  }
  return absl::OkStatus();
}

/// What Resize computes on an input of shape `x_shape`: mode, sizes, per-axis scales, roi.
struct ResizeTarget {
  ResizeMode mode;
  Shape sizes;
  std::vector<double> scales;
  std::vector<double> roi;  ///< [starts, ends] over all axes, for tf_crop_and_resize
};

absl::StatusOr<ResizeTarget> ResizeTargetOf(const OpContext& ctx, const Shape& x_shape) {
  ResizeTarget target;
  GTCO_REF_ASSIGN_OR_RETURN(target.mode, ModeOf(ctx));
  const int64_t rank = static_cast<int64_t>(x_shape.size());
  std::vector<int64_t> axes;
  for (int64_t dim = 0; dim < rank; ++dim) axes.push_back(dim);
  if (ctx.HasAttr("axes")) {
    GTCO_REF_ASSIGN_OR_RETURN(axes, ctx.Axes(ctx.Ints("axes"), rank));
  }
  GTCO_REF_RETURN_IF_ERROR(TargetOf(ctx, x_shape, axes, &target.sizes, &target.scales));
  if (target.mode.coordinates == "tf_crop_and_resize") {
    const Value* roi_value = ctx.opset() < 11 ? nullptr : ctx.input(1);
    const size_t count = axes.size();
    if (roi_value == nullptr || roi_value->data.size() != 2 * count) {
      return ctx.Invalid("tf_crop_and_resize needs an roi of 2 values per axis");
    }
    target.roi.assign(rank, 0.0);
    target.roi.resize(2 * rank, 1.0);
    for (size_t i = 0; i < count; ++i) {
      target.roi[axes[i]] = roi_value->data[i];
      target.roi[rank + axes[i]] = roi_value->data[count + i];
    }
  }
  return target;
}

OpResult Resize(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const ResizeTarget target, ResizeTargetOf(ctx, x->shape));
  return Single(ResizeAll(*x, target.mode, target.sizes, target.scales, target.roi));
}

absl::StatusOr<ResizeTarget> UpsampleTargetOf(const OpContext& ctx, const Shape& x_shape) {
  ResizeTarget target;
  ResizeMode& m = target.mode;
  m.mode = ctx.String("mode", "nearest");
  if (m.mode == "bilinear") m.mode = "linear";
  if (m.mode != "nearest" && m.mode != "linear") {
    return ctx.Unsupported(absl::StrCat("mode='", m.mode, "'"));
  }
  m.coordinates = "asymmetric";
  m.nearest = "simple";
  target.scales = ctx.Floats("scales");
  if (ctx.opset() >= 9) {
    GTCO_REF_ASSIGN_OR_RETURN(const Value* scales_value, ctx.Required(1));
    target.scales = scales_value->data;
  }
  if (target.scales.size() != x_shape.size()) return ctx.Invalid("scales does not match the rank");
  target.sizes = x_shape;
  for (size_t dim = 0; dim < target.scales.size(); ++dim) {
    if (!(target.scales[dim] > 0)) return ctx.Invalid("scales must be positive");
    target.sizes[dim] =
        static_cast<int64_t>(target.scales[dim] * static_cast<double>(x_shape[dim]));
  }
  return target;
}

OpResult Upsample(const OpContext& ctx) {
  GTCO_REF_ASSIGN_OR_RETURN(const Value* x, ctx.Required(0));
  GTCO_REF_ASSIGN_OR_RETURN(const ResizeTarget target, UpsampleTargetOf(ctx, x->shape));
  return Single(ResizeAll(*x, target.mode, target.sizes, target.scales, target.roi));
}

}  // namespace

void AddResizeOps(OpTable* t) {
  (*t)["Resize"] = Resize;
  (*t)["Upsample"] = Upsample;
}

}  // namespace gtco::runtime::reference::internal

namespace gtco::runtime::reference {

absl::StatusOr<std::optional<std::vector<ResizeAxisTaps>>> SeparableResizeTaps(
    const Node& node, const std::vector<const Value*>& inputs, const std::vector<int64_t>& x_shape) {
  using Result = std::optional<std::vector<ResizeAxisTaps>>;
  const bool upsample = node.op_type == "Upsample";
  const bool default_domain = node.domain.empty() || node.domain == "ai.onnx";
  if (!default_domain || (node.op_type != "Resize" && !upsample)) return Result();
  const internal::OpContext ctx(node, inputs, 1);
  absl::StatusOr<internal::ResizeTarget> target =
      upsample ? internal::UpsampleTargetOf(ctx, x_shape) : internal::ResizeTargetOf(ctx, x_shape);
  if (!target.ok()) return target.status();
  const internal::ResizeMode& m = target->mode;
  if (m.mode == "cubic" || m.antialias || m.coordinates == "tf_crop_and_resize") return Result();
  std::vector<ResizeAxisTaps> axes;
  for (const auto& [axis, plan] :
       internal::PlanAxes(x_shape, m, target->sizes, target->scales, target->roi)) {
    ResizeAxisTaps taps;
    taps.axis = axis;
    taps.in = x_shape[axis];
    taps.out = static_cast<int64_t>(plan.taps.size());
    for (int64_t x = 0; x < taps.out; ++x) {
      const auto& at = plan.taps[x];
      if (plan.extrapolate[x] || at.size() > 2) return Result();
      taps.first.push_back(at.empty() ? 0 : at[0].first);
      taps.first_weight.push_back(at.empty() ? 0.0 : at[0].second);
      taps.second.push_back(at.size() < 2 ? 0 : at[1].first);
      taps.second_weight.push_back(at.size() < 2 ? 0.0 : at[1].second);
    }
    axes.push_back(std::move(taps));
  }
  return Result(std::move(axes));
}

}  // namespace gtco::runtime::reference
