// Sliding-window CUDA kernels: max and average pooling ("cuda_pool/v1") and depthwise
// convolution ("cuda_conv_dw/v1", cuda/conv) compute each output element from an R x S window of
// one input plane. One thread computes `ept` outputs one block apart (a warp's outputs are
// consecutive, so its loads of neighbouring windows coalesce), in a grid-stride loop; every tap
// is unrolled (windows up to 64 taps) and taps in the padding are skipped; the fused epilogue is
// applied at the store. This header holds what the sketches' plans and the generator agree on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/kernels/family.h"
#include "common/target/target.h"

namespace gtco::kernels::cuda_window {

/// What a window kernel computes per output element.
enum class WindowOp { kMax, kAverage, kDepthwise };

/// The window geometry of a pool or depthwise conv workload.
struct Window {
  WindowOp op = WindowOp::kMax;
  int64_t batch = 1;
  int64_t in_channels = 1, out_channels = 1;  ///< C; K (= C for pooling)
  int64_t in_h = 1, in_w = 1, out_h = 1, out_w = 1;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  bool count_include_pad = false;  ///< kAverage

  int64_t Outputs() const { return batch * out_channels * out_h * out_w; }
  /// Output channels per input channel (depthwise channel multiplier; 1 for pooling).
  int64_t Multiplier() const { return out_channels / in_channels; }
};

/// The window of a kPool workload, or of a depthwise (C / groups == 1) kConv workload.
Window PoolWindow(const ir::PoolParams& p);
Window DepthwiseWindow(const ir::ConvParams& p);

/// Knob order: "block" (threads per block), "ept" (outputs per thread per grid-stride step).
enum WindowKnob { kBlock, kEpt };
std::vector<std::string> WindowKnobNames();
/// Candidate values, the default first: 256 threads (128 when 256 leave fewer than two blocks per
/// SM), one output per thread.
std::vector<Knob> WindowKnobs(const Window& window, const target::HardwareInfo& hw);
/// Grid (one block per block * ept outputs, at most 2^31 - 1 blocks), block, registers; tile_m
/// is the outputs of one block.
CudaPlan WindowPlan(const Window& window, const KnobValues& values);
/// CudaResourceRule, then "exceeds_shape" (a block step covering more than twice the outputs,
/// but the smallest); nullptr when admitted.
const char* WindowPruneRule(const Window& window, const target::HardwareInfo& hw,
                            const KnobValues& values);

/// The kernel for `w` (whose window is `window`), named `entry`. INVALID_ARGUMENT for values out
/// of the knobs' range, a non-f32 input or a bad epilogue.
absl::StatusOr<std::string> EmitWindowKernel(const ir::Workload& w, const Window& window,
                                             const KnobValues& values, const std::string& entry);

}  // namespace gtco::kernels::cuda_window
