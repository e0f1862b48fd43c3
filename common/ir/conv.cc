// Convolution workloads: shapes, canonical params line, validation, flops and reference.
#include "common/ir/conv.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/ir/params_text.h"
#include "common/util/status.h"

namespace gtco::ir {
namespace {

using internal::ForEachField;
using internal::LineError;
using internal::ParseWindowField;
using internal::ShapeText;
using internal::WindowSummary;
using internal::WindowText;

absl::Status ExpectShape(const TensorDesc& tensor, const std::vector<int64_t>& expected,
                         const char* what) {
  if (tensor.shape == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("workload conv ", what, " has shape ",
                                                 ShapeText(tensor.shape), ", expected ",
                                                 ShapeText(expected)));
}

/// Each conv size is at most 2^20 (so every product below stays far inside int64).
constexpr int64_t kMaxConvDim = int64_t{1} << 20;

/// Phases of `size` pixels taken every `stride`-th: ceil(size / stride).
int64_t PhaseCeil(int64_t size, int64_t stride) {
  return (std::max<int64_t>(size, 0) + stride - 1) / stride;
}

}  // namespace

int64_t ConvOutH(const ConvParams& p) {
  if (p.stride_h <= 0) return 0;
  const int64_t span = p.in_h + p.pad_top + p.pad_bottom - p.dilation_h * (p.kernel_h - 1) - 1;
  return span < 0 ? 0 : span / p.stride_h + 1;
}

int64_t ConvOutW(const ConvParams& p) {
  if (p.stride_w <= 0) return 0;
  const int64_t span = p.in_w + p.pad_left + p.pad_right - p.dilation_w * (p.kernel_w - 1) - 1;
  return span < 0 ? 0 : span / p.stride_w + 1;
}

int64_t ConvPairPhaseH(const ConvParams& p) {
  return PhaseCeil(p.in_h + p.pad_top + p.pad_bottom, std::max<int64_t>(p.stride_h, 1));
}

int64_t ConvPairPhaseW(const ConvParams& p) {
  return PhaseCeil(p.in_w + p.pad_left + p.pad_right, std::max<int64_t>(p.stride_w, 1));
}

int64_t ConvPairPlane(const ConvParams& p) {
  return std::max<int64_t>(p.stride_h, 1) * std::max<int64_t>(p.stride_w, 1) *
         ConvPairPhaseH(p) * ConvPairPhaseW(p);
}

int64_t ConvPairTailPlanes(const ConvParams& p) {
  return PhaseCeil(kConvPairTail, std::max<int64_t>(ConvPairPlane(p), 1));
}

int64_t ConvPairIndex(const ConvParams& p, int64_t n, int64_t c, int64_t h, int64_t w) {
  const int64_t sh = std::max<int64_t>(p.stride_h, 1), sw = std::max<int64_t>(p.stride_w, 1);
  const int64_t row = h + p.pad_top, column = w + p.pad_left;
  const int64_t phase = (row % sh) * sw + column % sw;
  const int64_t phase_w = ConvPairPhaseW(p);
  const int64_t pixel = phase * ConvPairPhaseH(p) * phase_w + (row / sh) * phase_w + column / sw;
  return ((n * (p.in_channels / 2 + ConvPairTailPlanes(p)) + c / 2) * ConvPairPlane(p) + pixel) *
             2 +
         c % 2;
}

std::vector<float> ConvPairsToImage(const ConvParams& p, const std::vector<float>& x) {
  GTCO_CHECK(static_cast<int64_t>(x.size()) ==
                 p.batch * (p.in_channels + 2 * ConvPairTailPlanes(p)) * ConvPairPlane(p),
             "conv pairs: wrong size");
  std::vector<float> image(p.batch * p.in_channels * p.in_h * p.in_w);
  int64_t flat = 0;
  for (int64_t n = 0; n < p.batch; ++n) {
    for (int64_t c = 0; c < p.in_channels; ++c) {
      for (int64_t h = 0; h < p.in_h; ++h) {
        for (int64_t w = 0; w < p.in_w; ++w) image[flat++] = x[ConvPairIndex(p, n, c, h, w)];
      }
    }
  }
  return image;
}

std::vector<float> ConvImageToPairs(const ConvParams& p, const std::vector<float>& image) {
  GTCO_CHECK(static_cast<int64_t>(image.size()) == p.batch * p.in_channels * p.in_h * p.in_w,
             "conv pairs: wrong image size");
  std::vector<float> x(p.batch * (p.in_channels + 2 * ConvPairTailPlanes(p)) * ConvPairPlane(p),
                       0.0f);
  int64_t flat = 0;
  for (int64_t n = 0; n < p.batch; ++n) {
    for (int64_t c = 0; c < p.in_channels; ++c) {
      for (int64_t h = 0; h < p.in_h; ++h) {
        for (int64_t w = 0; w < p.in_w; ++w) x[ConvPairIndex(p, n, c, h, w)] = image[flat++];
      }
    }
  }
  return x;
}

std::vector<int64_t> ConvXShape(const ConvParams& p) {
  if (p.x_pairs) {
    return {p.batch, p.in_channels / 2 + ConvPairTailPlanes(p), ConvPairPlane(p), 2};
  }
  return {p.batch, p.in_channels, p.in_h, p.in_w};
}

std::vector<int64_t> ConvWShape(const ConvParams& p) {
  return {p.out_channels, p.groups > 0 ? p.in_channels / p.groups : 0, p.kernel_h, p.kernel_w};
}

std::vector<int64_t> ConvOutShape(const ConvParams& p) {
  return {p.batch, p.out_channels, ConvOutH(p), ConvOutW(p)};
}

Workload MakeConvWorkload(const ConvParams& p) {
  Workload w;
  w.anchor = AnchorKind::kConv;
  w.conv = p;
  w.inputs.resize(2);
  w.inputs[0].shape = ConvXShape(p);
  w.inputs[1].shape = ConvWShape(p);
  w.num_anchor_inputs = 2;
  w.output.shape = ConvOutShape(p);
  return w;
}

std::string ConvParamsLine(const ConvParams& p) {
  return absl::StrCat("conv n=", p.batch, " c=", p.in_channels, " h=", p.in_h, " w=", p.in_w,
                      " k=", p.out_channels, " r=", p.kernel_h, " s=", p.kernel_w, WindowText(p),
                      " groups=", p.groups, p.x_pairs ? " layout=pairs" : "");
}

absl::Status ParseConvParamsLine(const std::string& line, ConvParams& p) {
  return ForEachField(line, "conv", [&](const std::string& key, const std::string& text) {
    absl::Status window_error;
    if (ParseWindowField(key, text, line, p, &window_error)) return window_error;
    if (key == "layout") {
      if (text != "pairs") return LineError("unknown conv layout", line);
      p.x_pairs = true;
      return absl::OkStatus();
    }
    int64_t value = 0;
    if (!absl::SimpleAtoi(text, &value)) return LineError("bad integer", line);
    if (key == "n") {
      p.batch = value;
    } else if (key == "c") {
      p.in_channels = value;
    } else if (key == "h") {
      p.in_h = value;
    } else if (key == "w") {
      p.in_w = value;
    } else if (key == "k") {
      p.out_channels = value;
    } else if (key == "r") {
      p.kernel_h = value;
    } else if (key == "s") {
      p.kernel_w = value;
    } else if (key == "groups") {
      p.groups = value;
    } else {
      return LineError("unknown conv field", line);
    }
    return absl::OkStatus();
  });
}

std::string ConvSummary(const Workload& w) {
  const ConvParams& p = w.conv;
  std::string text = absl::StrCat("conv ", p.batch, "x", p.in_channels, "x", p.in_h, "x", p.in_w,
                                  " k", p.out_channels, " ", p.kernel_h, "x", p.kernel_w);
  absl::StrAppend(&text, WindowSummary(p));
  if (p.groups != 1) absl::StrAppend(&text, " /g", p.groups);
  if (p.x_pairs) absl::StrAppend(&text, " pairs");
  return text;
}

absl::Status ValidateConvShapes(const Workload& w) {
  const ConvParams& p = w.conv;
  for (int64_t value : {p.batch, p.in_channels, p.in_h, p.in_w, p.out_channels, p.kernel_h,
                        p.kernel_w, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w,
                        p.groups}) {
    if (value <= 0 || value > kMaxConvDim) {
      return absl::InvalidArgumentError(
          absl::StrCat("workload conv sizes, strides, dilations and groups must be in [1, 2^20]: ",
                       ConvParamsLine(p)));
    }
  }
  for (int64_t pad : {p.pad_top, p.pad_left, p.pad_bottom, p.pad_right}) {
    if (pad < 0 || pad > kMaxConvDim) {
      return absl::InvalidArgumentError(
          absl::StrCat("workload conv pads must be in [0, 2^20]: ", ConvParamsLine(p)));
    }
  }
  if (p.in_channels % p.groups != 0 || p.out_channels % p.groups != 0) {
    return absl::InvalidArgumentError(absl::StrCat("workload conv groups ", p.groups,
                                                   " must divide both channel counts (",
                                                   p.in_channels, ", ", p.out_channels, ")"));
  }
  if (ConvOutH(p) < 1 || ConvOutW(p) < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "workload conv kernel does not fit the padded image: ", ConvParamsLine(p)));
  }
  if (p.x_pairs && (p.stride_h > kConvPairMaxStride || p.stride_w > kConvPairMaxStride ||
                    p.dilation_h != 1 || p.dilation_w != 1 || p.groups != 1 ||
                    p.in_channels % 2 != 0 || p.kernel_w > kConvPairMaxKernelW)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "workload conv in the pair layout needs unit dilations, strides of at most ",
        kConvPairMaxStride, ", one group, an even channel count and a kernel at most ",
        kConvPairMaxKernelW, " wide: ",
        ConvParamsLine(p)));
  }
  const MatMulParams g = ConvGemmView(p);
  if (2.0 * g.batch * g.m * g.n * g.k > 4611686018427387904.0) {  // 2^62
    return absl::InvalidArgumentError(
        absl::StrCat("workload conv has more than 2^62 flops: ", ConvParamsLine(p)));
  }
  GTCO_RETURN_IF_ERROR(ExpectShape(w.inputs[0], ConvXShape(p), "input X"));
  GTCO_RETURN_IF_ERROR(ExpectShape(w.inputs[1], ConvWShape(p), "weights W"));
  return ExpectShape(w.output, ConvOutShape(p), "output");
}

int64_t ConvFlops(const ConvParams& p) {
  const MatMulParams g = ConvGemmView(p);
  return 2 * g.batch * g.m * g.n * g.k;
}

MatMulParams ConvGemmView(const ConvParams& p) {
  MatMulParams g;
  g.batch = p.batch * p.groups;
  g.m = p.out_channels / p.groups;
  g.n = ConvOutH(p) * ConvOutW(p);
  g.k = p.in_channels / p.groups * p.kernel_h * p.kernel_w;
  g.a_batched = p.groups > 1;
  g.b_batched = true;
  return g;
}

bool ConvIsPointwise(const ConvParams& p) {
  return p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 &&
         p.pad_top == 0 && p.pad_left == 0 && p.pad_bottom == 0 && p.pad_right == 0;
}

void ConvReference(const ConvParams& p, const std::vector<float>& x, const std::vector<float>& w,
                   int64_t plane_begin, int64_t plane_end, float* out) {
  GTCO_CHECK(!p.x_pairs, "ConvReference takes the image; convert a pair layout first");
  const int64_t oh_count = ConvOutH(p), ow_count = ConvOutW(p);
  const int64_t cg = p.in_channels / p.groups, kg = p.out_channels / p.groups;
  GTCO_CHECK(static_cast<int64_t>(x.size()) == p.batch * p.in_channels * p.in_h * p.in_w);
  GTCO_CHECK(static_cast<int64_t>(w.size()) == p.out_channels * cg * p.kernel_h * p.kernel_w);
  GTCO_CHECK(plane_begin >= 0 && plane_end <= p.batch * p.out_channels);
  for (int64_t plane = plane_begin; plane < plane_end; ++plane) {
    const int64_t n = plane / p.out_channels, k = plane % p.out_channels, g = k / kg;
    for (int64_t oh = 0; oh < oh_count; ++oh) {
      for (int64_t ow = 0; ow < ow_count; ++ow) {
        double sum = 0.0;
        for (int64_t c = 0; c < cg; ++c) {
          for (int64_t r = 0; r < p.kernel_h; ++r) {
            const int64_t ih = oh * p.stride_h - p.pad_top + r * p.dilation_h;
            if (ih < 0 || ih >= p.in_h) continue;
            for (int64_t s = 0; s < p.kernel_w; ++s) {
              const int64_t iw = ow * p.stride_w - p.pad_left + s * p.dilation_w;
              if (iw < 0 || iw >= p.in_w) continue;
              sum += static_cast<double>(
                         x[((n * p.in_channels + g * cg + c) * p.in_h + ih) * p.in_w + iw]) *
                     w[((k * cg + c) * p.kernel_h + r) * p.kernel_w + s];
            }
          }
        }
        out[(plane * oh_count + oh) * ow_count + ow] = static_cast<float>(sum);
      }
    }
  }
}

}  // namespace gtco::ir
