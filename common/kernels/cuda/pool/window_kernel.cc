// Knobs, plans and CUDA C of the sliding-window kernels (pooling, depthwise convolution).
#include "common/kernels/cuda/pool/window_kernel.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/codegen/cuda/cuda_source.h"
#include "common/ir/conv.h"
#include "common/ir/pool.h"
#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels::cuda_window {
namespace {

const std::vector<int64_t> kBlocks = {256, 128, 512, 64};
const std::vector<int64_t> kOutputsPerThread = {1, 2, 4};
/// Windows with more taps are unrolled by this factor only (kernels stay small).
constexpr int64_t kMaxUnrolledTaps = 64;
constexpr int64_t kMaxGridX = (int64_t{1} << 31) - 1;

bool OneOf(int64_t value, const std::vector<int64_t>& allowed) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

/// Statements accumulating the window of output (ih0, iw0) into `float acc`, reading the input
/// plane at `x` (and for depthwise the tap weights at `wt`).
std::string EmitWindowBody(const Window& window) {
  const std::string unroll =
      window.kernel_h * window.kernel_w <= kMaxUnrolledTaps ? "#pragma unroll" : "#pragma unroll 4";
  std::string code;
  switch (window.op) {
    case WindowOp::kMax:
      code = "      float acc = __int_as_float(0xff800000);\n";
      break;
    case WindowOp::kAverage:
      code = "      float acc = 0.0f, gtco_count = 0.0f;\n";
      break;
    case WindowOp::kDepthwise:
      code = "      float acc = 0.0f;\n";
      break;
  }
  absl::StrAppend(&code, "      ", unroll, "\n      for (int r = 0; r < ", window.kernel_h,
                  "; ++r) {\n        const int ih = ih0 + r * ", window.dilation_h, ";\n");
  // Rows and columns outside the image are skipped; with ceil_mode (no padding declared) a
  // window can still cross the bottom or right edge, so the checks stay.
  absl::StrAppend(&code, "        const bool row_in = ih >= 0 && ih < ", window.in_h, ";\n");
  absl::StrAppend(&code, "        ", unroll, "\n        for (int s = 0; s < ", window.kernel_w,
                  "; ++s) {\n          const int iw = iw0 + s * ", window.dilation_w, ";\n");
  absl::StrAppend(&code, "          const bool in = row_in && iw >= 0 && iw < ", window.in_w,
                  ";\n");
  const std::string value = absl::StrCat("x[ih * ", window.in_w, " + iw]");
  switch (window.op) {
    case WindowOp::kMax:
      absl::StrAppend(&code, "          if (in) acc = fmaxf(acc, ", value, ");\n");
      break;
    case WindowOp::kAverage:
      absl::StrAppend(&code, "          if (in) acc += ", value, ";\n");
      if (window.count_include_pad) {
        // Taps inside the padded image count (ONNX count_include_pad), even where they read zero.
        absl::StrAppend(&code, "          if (ih >= ", -window.pad_top, " && ih < ",
                        window.in_h + window.pad_bottom, " && iw >= ", -window.pad_left,
                        " && iw < ", window.in_w + window.pad_right, ") gtco_count += 1.0f;\n");
      } else {
        absl::StrAppend(&code, "          if (in) gtco_count += 1.0f;\n");
      }
      break;
    case WindowOp::kDepthwise:
      absl::StrAppend(&code, "          if (in) acc = fmaf(", value, ", wt[r * ", window.kernel_w,
                      " + s], acc);\n");
      break;
  }
  absl::StrAppend(&code, "        }\n      }\n");
  if (window.op == WindowOp::kAverage) absl::StrAppend(&code, "      acc = acc / gtco_count;\n");
  return code;
}

}  // namespace

Window PoolWindow(const ir::PoolParams& p) {
  Window window;
  window.op = p.max ? WindowOp::kMax : WindowOp::kAverage;
  window.batch = p.batch;
  window.in_channels = window.out_channels = p.channels;
  window.in_h = p.in_h;
  window.in_w = p.in_w;
  window.out_h = ir::PoolOutH(p);
  window.out_w = ir::PoolOutW(p);
  window.kernel_h = p.kernel_h;
  window.kernel_w = p.kernel_w;
  window.stride_h = p.stride_h;
  window.stride_w = p.stride_w;
  window.pad_top = p.pad_top;
  window.pad_left = p.pad_left;
  window.pad_bottom = p.pad_bottom;
  window.pad_right = p.pad_right;
  window.dilation_h = p.dilation_h;
  window.dilation_w = p.dilation_w;
  window.count_include_pad = p.count_include_pad;
  return window;
}

Window DepthwiseWindow(const ir::ConvParams& p) {
  Window window;
  window.op = WindowOp::kDepthwise;
  window.batch = p.batch;
  window.in_channels = p.in_channels;
  window.out_channels = p.out_channels;
  window.in_h = p.in_h;
  window.in_w = p.in_w;
  window.out_h = ir::ConvOutH(p);
  window.out_w = ir::ConvOutW(p);
  window.kernel_h = p.kernel_h;
  window.kernel_w = p.kernel_w;
  window.stride_h = p.stride_h;
  window.stride_w = p.stride_w;
  window.pad_top = p.pad_top;
  window.pad_left = p.pad_left;
  window.pad_bottom = p.pad_bottom;
  window.pad_right = p.pad_right;
  window.dilation_h = p.dilation_h;
  window.dilation_w = p.dilation_w;
  return window;
}

std::vector<std::string> WindowKnobNames() { return {"block", "ept"}; }

std::vector<Knob> WindowKnobs(const Window& window, const target::HardwareInfo& hw) {
  std::vector<Knob> knobs = {{"block", kBlocks}, {"ept", kOutputsPerThread}};
  const int64_t sm_count = std::max(hw.sm_count, 1);
  if (CeilDiv(window.Outputs(), 256) < 2 * sm_count) {
    knobs[kBlock].values = {128, 256, 512, 64};
  }
  return knobs;
}

CudaPlan WindowPlan(const Window& window, const KnobValues& values) {
  const int64_t block = values[kBlock], ept = values[kEpt];
  CudaPlan plan;
  const int64_t step = std::max<int64_t>(1, block * ept);
  plan.grid_x = std::min(kMaxGridX, CeilDiv(window.Outputs(), step));
  plan.block_x = static_cast<int>(block);
  plan.tile_m = block * ept;
  // Indices, the window origin, the accumulator (and count or weight pointer) per output.
  plan.est_registers = static_cast<int>(std::min<int64_t>(24 + 6 * ept, 1024));
  return plan;
}

const char* WindowPruneRule(const Window& window, const target::HardwareInfo& hw,
                            const KnobValues& values) {
  if (const char* rule = CudaResourceRule(hw, WindowPlan(window, values))) return rule;
  const int64_t step = values[kBlock] * values[kEpt];
  const int64_t smallest = kBlocks.back() * kOutputsPerThread.front();
  if (step > smallest && step >= 2 * window.Outputs()) return "exceeds_shape";
  return nullptr;
}

absl::StatusOr<std::string> EmitWindowKernel(const ir::Workload& w, const Window& window,
                                             const KnobValues& values, const std::string& entry) {
  if (values.size() != 2 || !OneOf(values[kBlock], kBlocks) ||
      !OneOf(values[kEpt], kOutputsPerThread)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported window schedule for ", w.Description(),
                     ": expects block in {64,128,256,512} and ept in {1,2,4}"));
  }
  for (int input_idx = 0; input_idx < w.num_anchor_inputs; ++input_idx) {
    if (w.inputs[input_idx].dtype != ir::DType::kF32) {
      return absl::InvalidArgumentError(
          absl::StrCat("CUDA window kernels read f32 inputs, not ", w.Description()));
    }
  }
  const int64_t block = values[kBlock], ept = values[kEpt];
  const int64_t outputs = window.Outputs();
  const int64_t in_elements = window.batch * window.in_channels * window.in_h * window.in_w;
  // 32-bit indices while base + gridDim.x * step stays below 2^31.
  const bool narrow =
      2 * outputs + block * ept < (int64_t{1} << 31) && in_elements < (int64_t{1} << 31);
  const std::string idx = narrow ? "int" : "long long";
  const std::string suffix = narrow ? "" : "LL";
  GTCO_ASSIGN_OR_RETURN(const std::string epilogue, EmitEpilogue(w, "acc", "row", "ow"));
  std::string code = Prelude();
  absl::StrAppend(&code, KernelSignature(w, entry, static_cast<int>(block)), " {\n");
  absl::StrAppend(&code, "  for (", idx, " base = (", idx, ")blockIdx.x * ", block * ept, suffix,
                  " + (", idx, ")threadIdx.x; base < ", outputs, suffix, "; base += (", idx,
                  ")gridDim.x * ", block * ept, suffix, ") {\n");
  absl::StrAppend(&code, "#pragma unroll\n    for (int u = 0; u < ", ept, "; ++u) {\n");
  absl::StrAppend(&code, "      const ", idx, " e = base + u * ", block, ";\n");
  absl::StrAppend(&code, "      if (e >= ", outputs, suffix, ") break;\n");
  // row = plane * OH + oh (the epilogue's flattened leading dims), plane = n * K + k.
  absl::StrAppend(&code, "      const ", idx, " row = e / ", window.out_w, ";\n");
  absl::StrAppend(&code, "      const int ow = (int)(e - row * ", window.out_w, ");\n");
  absl::StrAppend(&code, "      const ", idx, " plane = row / ", window.out_h, ";\n");
  absl::StrAppend(&code, "      const int oh = (int)(row - plane * ", window.out_h, ");\n");
  absl::StrAppend(&code, "      const int ih0 = oh * ", window.stride_h, " - ", window.pad_top,
                  ", iw0 = ow * ", window.stride_w, " - ", window.pad_left, ";\n");
  std::string in_plane = "plane";
  if (window.op == WindowOp::kDepthwise) {
    absl::StrAppend(&code, "      const int k = (int)(plane % ", window.out_channels, ");\n");
    absl::StrAppend(&code, "      const float* __restrict__ wt = in1 + k * ",
                    window.kernel_h * window.kernel_w, ";\n");
    in_plane = absl::StrCat("(plane / ", window.out_channels, ") * ", window.in_channels, " + k / ",
                            window.Multiplier());
  }
  absl::StrAppend(&code, "      const float* __restrict__ x = in0 + (long long)(", in_plane, ") * ",
                  window.in_h * window.in_w, "LL;\n");
  absl::StrAppend(&code, EmitWindowBody(window));
  absl::StrAppend(&code, "      {\n      ", epilogue, "      ",
                  StoreFromFloat(w.output.dtype, "out", "e", "result"), "\n      }\n");
  absl::StrAppend(&code, "    }\n  }\n}\n");
  return code;
}

}  // namespace gtco::kernels::cuda_window
