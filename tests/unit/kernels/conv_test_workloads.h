// Convolution and pooling workloads the CUDA conv and pool tests share (NVRTC compile here, GPU
// correctness in tests/unit/worker/cuda_mappings_gpu_test.cc): ResNet-50-like shapes (3x3 s1 p1, the
// 7x7 s2 p3 stem, 1x1, 3x3 s2), grouped, dilated, asymmetric pads, depthwise, ViT-B/16's 16x16
// stride-16 patch embedding, each with the epilogues the planner fuses (per-channel bias, residual
// add, ReLU, ReLU6 as Clip), and max / average pools with padding, ceil_mode and
// count_include_pad.
#pragma once

#include <string>
#include <vector>

#include "common/ir/conv.h"
#include "common/ir/pool.h"
#include "common/ir/workload.h"

namespace gtco::testing {

struct NamedWorkload {
  std::string name;
  ir::Workload workload;
};

inline ir::ConvParams ConvShape(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r,
                                int64_t s, int64_t stride, int64_t pad, int64_t groups = 1,
                                int64_t dilation = 1) {
  ir::ConvParams p;
  p.batch = n;
  p.in_channels = c;
  p.in_h = h;
  p.in_w = w;
  p.out_channels = k;
  p.kernel_h = r;
  p.kernel_w = s;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
  p.groups = groups;
  p.dilation_h = p.dilation_w = dilation;
  return p;
}

/// + bias[K, 1, 1] (input 2).
inline ir::Workload WithBias(ir::Workload w) {
  using K = ir::Operand::Kind;
  const int input = static_cast<int>(w.inputs.size());
  w.inputs.push_back({ir::DType::kF32, {w.conv.out_channels, 1, 1}});
  w.epilogue.push_back({ir::EwOp::kAdd, {{K::kAcc, 0, 0}, {K::kInput, input, 0}}});
  return w;
}

/// The last value (or the anchor's) through ReLU.
inline ir::Workload WithRelu(ir::Workload w) {
  using K = ir::Operand::Kind;
  const ir::Operand last = w.epilogue.empty()
                               ? ir::Operand{K::kAcc, 0, 0}
                               : ir::Operand{K::kValue, static_cast<int>(w.epilogue.size()) - 1, 0};
  w.epilogue.push_back({ir::EwOp::kRelu, {last}});
  return w;
}

/// + a residual of the output's shape, then ReLU (ResNet's block ends).
inline ir::Workload WithResidualRelu(ir::Workload w) {
  using K = ir::Operand::Kind;
  const int input = static_cast<int>(w.inputs.size());
  w.inputs.push_back({ir::DType::kF32, w.output.shape});
  const ir::Operand last = w.epilogue.empty()
                               ? ir::Operand{K::kAcc, 0, 0}
                               : ir::Operand{K::kValue, static_cast<int>(w.epilogue.size()) - 1, 0};
  w.epilogue.push_back({ir::EwOp::kAdd, {last, {K::kInput, input, 0}}});
  return WithRelu(w);
}

/// The last value clipped to [0, 6] (ReLU6, as the planner lowers Clip).
inline ir::Workload WithClip6(ir::Workload w) {
  using K = ir::Operand::Kind;
  const ir::Operand last = w.epilogue.empty()
                               ? ir::Operand{K::kAcc, 0, 0}
                               : ir::Operand{K::kValue, static_cast<int>(w.epilogue.size()) - 1, 0};
  w.epilogue.push_back({ir::EwOp::kMax, {last, {K::kConst, 0, 0.0f}}});
  w.epilogue.push_back(
      {ir::EwOp::kMin,
       {{K::kValue, static_cast<int>(w.epilogue.size()) - 1, 0}, {K::kConst, 0, 6.0f}}});
  return w;
}

/// Convolutions of ResNet-50, ViT-B/16 and MobileNetV2 shapes and the unusual window cases.
/// `small` shrinks the spatial sizes and channels (GPU correctness checks against the CPU
/// reference stay fast) while keeping every window case and a K that is not a tile multiple.
inline std::vector<NamedWorkload> ConvWorkloads(bool small) {
  const int64_t hw = small ? 20 : 56, c = small ? 24 : 64;
  std::vector<NamedWorkload> cases;
  cases.push_back(
      {"3x3_s1_p1_bias_relu",
       WithRelu(WithBias(ir::MakeConvWorkload(ConvShape(1, c, hw, hw, c, 3, 3, 1, 1))))});
  cases.push_back({"stem_7x7_s2_p3_bias_relu",
                   WithRelu(WithBias(ir::MakeConvWorkload(ConvShape(
                       small ? 2 : 1, 3, small ? 38 : 224, small ? 38 : 224, 64, 7, 7, 2, 3))))});
  cases.push_back(
      {"1x1_bias_residual_relu", WithResidualRelu(WithBias(ir::MakeConvWorkload(
                                     ConvShape(small ? 2 : 1, 4 * c, hw, hw, c, 1, 1, 1, 0))))});
  cases.push_back({"3x3_s2_p1_bias",
                   WithBias(ir::MakeConvWorkload(ConvShape(1, 2 * c, hw, hw, 2 * c, 3, 3, 2, 1)))});
  cases.push_back({"grouped_g4_3x3", WithRelu(WithBias(ir::MakeConvWorkload(
                                         ConvShape(2, c, hw / 2, hw / 2, 2 * c, 3, 3, 1, 1, 4))))});
  cases.push_back({"dilated_d2_3x3_p2", WithBias(ir::MakeConvWorkload(ConvShape(
                                            1, c, hw / 2, hw / 2, c, 3, 3, 1, 2, 1, 2)))});
  ir::ConvParams asymmetric = ConvShape(1, 16, hw / 2 + 1, hw / 2 - 1, 20, 3, 2, 2, 0);
  asymmetric.pad_top = 0;
  asymmetric.pad_left = 1;
  asymmetric.pad_bottom = 2;
  asymmetric.pad_right = 1;
  asymmetric.stride_w = 1;
  cases.push_back({"asymmetric_pads_3x2", WithClip6(ir::MakeConvWorkload(asymmetric))});
  cases.push_back({"vit_patch_16x16_s16",
                   WithBias(ir::MakeConvWorkload(ConvShape(1, 3, small ? 64 : 224, small ? 64 : 224,
                                                           small ? 96 : 768, 16, 16, 16, 0)))});
  cases.push_back({"depthwise_3x3_s1_relu6", WithClip6(WithBias(ir::MakeConvWorkload(ConvShape(
                                                 1, 2 * c, hw, hw, 2 * c, 3, 3, 1, 1, 2 * c))))});
  cases.push_back({"depthwise_3x3_s2_multiplier2",
                   WithBias(ir::MakeConvWorkload(ConvShape(1, c, hw, hw, 2 * c, 3, 3, 2, 1, c)))});
  return cases;
}

inline ir::PoolParams PoolShape(bool max, int64_t n, int64_t c, int64_t h, int64_t w, int64_t r,
                                int64_t stride, int64_t pad) {
  ir::PoolParams p;
  p.max = max;
  p.batch = n;
  p.channels = c;
  p.in_h = h;
  p.in_w = w;
  p.kernel_h = p.kernel_w = r;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
  return p;
}

/// Max and average pools: ResNet's 3x3 s2 p1 max pool, a 2x2 average, count_include_pad,
/// ceil_mode, dilation, and a pool with a fused ReLU epilogue.
inline std::vector<NamedWorkload> PoolWorkloads(bool small) {
  const int64_t hw = small ? 30 : 112, c = small ? 16 : 64;
  std::vector<NamedWorkload> cases;
  cases.push_back(
      {"maxpool_3x3_s2_p1", ir::MakePoolWorkload(PoolShape(true, 1, c, hw, hw, 3, 2, 1))});
  cases.push_back(
      {"avgpool_2x2_s2", ir::MakePoolWorkload(PoolShape(false, 2, c, hw, hw, 2, 2, 0))});
  ir::PoolParams include_pad = PoolShape(false, 1, c, hw / 2, hw / 2, 3, 1, 1);
  include_pad.count_include_pad = true;
  cases.push_back({"avgpool_3x3_include_pad", ir::MakePoolWorkload(include_pad)});
  // Sizes whose last window starts inside the image only with ceil_mode.
  const int64_t odd = small ? 14 : 56;
  ir::PoolParams ceil = PoolShape(true, 1, c, odd, odd, 3, 2, 0);
  ceil.ceil_mode = true;
  cases.push_back({"maxpool_ceil_mode", ir::MakePoolWorkload(ceil)});
  ir::PoolParams ceil_avg = PoolShape(false, 1, c, odd, odd - 1, 3, 2, 1);
  ceil_avg.ceil_mode = true;
  cases.push_back({"avgpool_ceil_mode_p1", ir::MakePoolWorkload(ceil_avg)});
  ir::PoolParams dilated = PoolShape(true, 1, c, hw / 2, hw / 2, 2, 1, 1);
  dilated.dilation_h = dilated.dilation_w = 2;
  cases.push_back({"maxpool_dilated", ir::MakePoolWorkload(dilated)});
  ir::Workload relu = ir::MakePoolWorkload(PoolShape(false, 1, c, hw / 2, hw / 2, 7, 7, 0));
  relu.epilogue.push_back({ir::EwOp::kRelu, {{ir::Operand::Kind::kAcc, 0, 0}}});
  cases.push_back({"avgpool_7x7_relu", relu});
  return cases;
}

}  // namespace gtco::testing
