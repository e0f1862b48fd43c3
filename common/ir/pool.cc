// Pooling workloads: shapes, canonical params line, validation, flops and reference.
#include "common/ir/pool.h"

#include <algorithm>
#include <cmath>
#include <limits>

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

constexpr int64_t kMaxPoolDim = int64_t{1} << 20;

/// Output size of one dim (see PoolOutH).
int64_t OutSize(int64_t size, int64_t kernel, int64_t stride, int64_t pad_begin, int64_t pad_end,
                int64_t dilation, bool ceil_mode) {
  if (stride <= 0) return 0;
  const int64_t span = size + pad_begin + pad_end - dilation * (kernel - 1) - 1;
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // A last window starting in the end padding is dropped (as ONNX Runtime and PyTorch do).
  if (ceil_mode && (out - 1) * stride >= size + pad_begin) --out;
  return out;
}

}  // namespace

int64_t PoolOutH(const PoolParams& p) {
  return OutSize(p.in_h, p.kernel_h, p.stride_h, p.pad_top, p.pad_bottom, p.dilation_h,
                 p.ceil_mode);
}

int64_t PoolOutW(const PoolParams& p) {
  return OutSize(p.in_w, p.kernel_w, p.stride_w, p.pad_left, p.pad_right, p.dilation_w,
                 p.ceil_mode);
}

std::vector<int64_t> PoolXShape(const PoolParams& p) {
  return {p.batch, p.channels, p.in_h, p.in_w};
}

std::vector<int64_t> PoolOutShape(const PoolParams& p) {
  return {p.batch, p.channels, PoolOutH(p), PoolOutW(p)};
}

Workload MakePoolWorkload(const PoolParams& p) {
  Workload w;
  w.anchor = AnchorKind::kPool;
  w.pool = p;
  w.inputs.resize(1);
  w.inputs[0].shape = PoolXShape(p);
  w.num_anchor_inputs = 1;
  w.output.shape = PoolOutShape(p);
  return w;
}

std::string PoolParamsLine(const PoolParams& p) {
  return absl::StrCat("pool op=", p.max ? "max" : "avg", " n=", p.batch, " c=", p.channels,
                      " h=", p.in_h, " w=", p.in_w, " r=", p.kernel_h, " s=", p.kernel_w,
                      WindowText(p), " ceil=", p.ceil_mode ? 1 : 0,
                      " include_pad=", p.count_include_pad ? 1 : 0);
}

absl::Status ParsePoolParamsLine(const std::string& line, PoolParams& p) {
  return ForEachField(line, "pool", [&](const std::string& key, const std::string& text) {
    if (key == "op") {
      if (text != "max" && text != "avg") return LineError("op must be max or avg", line);
      p.max = text == "max";
      return absl::OkStatus();
    }
    absl::Status window_error;
    if (ParseWindowField(key, text, line, p, &window_error)) return window_error;
    int64_t value = 0;
    if (!absl::SimpleAtoi(text, &value)) return LineError("bad integer", line);
    if (key == "n") {
      p.batch = value;
    } else if (key == "c") {
      p.channels = value;
    } else if (key == "h") {
      p.in_h = value;
    } else if (key == "w") {
      p.in_w = value;
    } else if (key == "r") {
      p.kernel_h = value;
    } else if (key == "s") {
      p.kernel_w = value;
    } else if (key == "ceil") {
      p.ceil_mode = value != 0;
    } else if (key == "include_pad") {
      p.count_include_pad = value != 0;
    } else {
      return LineError("unknown pool field", line);
    }
    return absl::OkStatus();
  });
}

std::string PoolSummary(const Workload& w) {
  const PoolParams& p = w.pool;
  std::string text = absl::StrCat(p.max ? "maxpool " : "avgpool ", p.batch, "x", p.channels, "x",
                                  p.in_h, "x", p.in_w, " ", p.kernel_h, "x", p.kernel_w);
  absl::StrAppend(&text, WindowSummary(p));
  if (p.ceil_mode) absl::StrAppend(&text, " ceil");
  if (p.count_include_pad && !p.max) absl::StrAppend(&text, " include_pad");
  return text;
}

absl::Status ValidatePoolShapes(const Workload& w) {
  const PoolParams& p = w.pool;
  for (int64_t value : {p.batch, p.channels, p.in_h, p.in_w, p.kernel_h, p.kernel_w, p.stride_h,
                        p.stride_w, p.dilation_h, p.dilation_w}) {
    if (value <= 0 || value > kMaxPoolDim) {
      return absl::InvalidArgumentError(absl::StrCat(
          "workload pool sizes, strides and dilations must be in [1, 2^20]: ", PoolParamsLine(p)));
    }
  }
  if (p.kernel_h * p.kernel_w > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload pool window has more than 1024 taps: ", PoolParamsLine(p)));
  }
  // ONNX: a pad must be smaller than the (dilated) window, so every window touches the image.
  if (p.pad_top < 0 || p.pad_bottom < 0 || p.pad_left < 0 || p.pad_right < 0 ||
      std::max(p.pad_top, p.pad_bottom) > p.dilation_h * (p.kernel_h - 1) ||
      std::max(p.pad_left, p.pad_right) > p.dilation_w * (p.kernel_w - 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "workload pool pads must be non-negative and smaller than the window: ",
        PoolParamsLine(p)));
  }
  if (PoolOutH(p) < 1 || PoolOutW(p) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload pool window does not fit the padded image: ", PoolParamsLine(p)));
  }
  if (w.inputs[0].shape != PoolXShape(p) || w.output.shape != PoolOutShape(p)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "workload pool shapes ", ShapeText(w.inputs[0].shape), " -> ", ShapeText(w.output.shape),
        " disagree with its params (expected ", ShapeText(PoolXShape(p)), " -> ",
        ShapeText(PoolOutShape(p)), ")"));
  }
  return absl::OkStatus();
}

int64_t PoolFlops(const PoolParams& p) {
  return p.batch * p.channels * PoolOutH(p) * PoolOutW(p) * p.kernel_h * p.kernel_w;
}

void PoolReference(const PoolParams& p, const std::vector<float>& x, int64_t plane_begin,
                   int64_t plane_end, float* out) {
  const int64_t oh_count = PoolOutH(p), ow_count = PoolOutW(p);
  GTCO_CHECK(static_cast<int64_t>(x.size()) == p.batch * p.channels * p.in_h * p.in_w);
  for (int64_t plane = plane_begin; plane < plane_end; ++plane) {
    const float* image = x.data() + plane * p.in_h * p.in_w;
    for (int64_t oh = 0; oh < oh_count; ++oh) {
      for (int64_t ow = 0; ow < ow_count; ++ow) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0.0;
        int64_t inside = 0, inside_padded = 0;
        for (int64_t r = 0; r < p.kernel_h; ++r) {
          const int64_t ih = oh * p.stride_h - p.pad_top + r * p.dilation_h;
          for (int64_t s = 0; s < p.kernel_w; ++s) {
            const int64_t iw = ow * p.stride_w - p.pad_left + s * p.dilation_w;
            if (ih >= -p.pad_top && ih < p.in_h + p.pad_bottom && iw >= -p.pad_left &&
                iw < p.in_w + p.pad_right) {
              ++inside_padded;
            }
            if (ih < 0 || ih >= p.in_h || iw < 0 || iw >= p.in_w) continue;
            const double value = image[ih * p.in_w + iw];
            best = std::max(best, value);
            sum += value;
            ++inside;
          }
        }
        const int64_t count = p.count_include_pad ? inside_padded : inside;
        out[(plane * oh_count + oh) * ow_count + ow] = static_cast<float>(
            p.max ? best
                  : (count > 0 ? sum / static_cast<double>(count)
                               : std::numeric_limits<double>::quiet_NaN()));
      }
    }
  }
}

}  // namespace gtco::ir
