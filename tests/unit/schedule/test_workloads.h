// Workload builders shared by the schedule tests (built directly, without the graph importer).
#pragma once

#include <cstdint>
#include <vector>

#include "common/ir/workload.h"
#include "common/target/target.h"

namespace gtco::schedule::testing {

/// A CPU host with AVX-512 F, AVX2 and FMA and `cores` cores (nothing else set).
inline target::HardwareInfo Avx512Host(int cores = 8) {
  target::HardwareInfo hw;
  hw.cpu_features = {"avx2", "avx512f", "fma"};
  hw.cores = cores;
  return hw;
}

/// ResNet-50's stem convolution: 3 -> 64 channels, 7x7, stride 2, pads 3, on a 224x224 image.
inline ir::ConvParams ResNetStem() {
  ir::ConvParams stem;
  stem.in_channels = 3;
  stem.in_h = stem.in_w = 224;
  stem.out_channels = 64;
  stem.kernel_h = stem.kernel_w = 7;
  stem.stride_h = stem.stride_w = 2;
  stem.pad_top = stem.pad_left = stem.pad_bottom = stem.pad_right = 3;
  return stem;
}

inline ir::TensorDesc Tensor(std::vector<int64_t> shape) {
  ir::TensorDesc desc;
  desc.shape = std::move(shape);
  return desc;
}

inline ir::Operand Acc() { return ir::Operand{ir::Operand::Kind::kAcc, 0, 0.0f}; }
inline ir::Operand In(int index) { return ir::Operand{ir::Operand::Kind::kInput, index, 0.0f}; }
inline ir::Operand Const(float value) { return ir::Operand{ir::Operand::Kind::kConst, 0, value}; }
inline ir::Operand Val(int index) { return ir::Operand{ir::Operand::Kind::kValue, index, 0.0f}; }

/// Appends `x + bias` then gelu (erf form) to `w`'s epilogue; `bias_input` indexes w.inputs.
inline void AddBiasGelu(ir::Workload* w, int bias_input) {
  const int base = static_cast<int>(w->epilogue.size());
  const ir::Operand x = base == 0 ? Acc() : Val(base - 1);
  w->epilogue.push_back({ir::EwOp::kAdd, {x, In(bias_input)}});              // base
  w->epilogue.push_back({ir::EwOp::kMul, {Val(base), Const(0.70710678f)}});  // base+1
  w->epilogue.push_back({ir::EwOp::kErf, {Val(base + 1)}});                  // base+2
  w->epilogue.push_back({ir::EwOp::kAdd, {Val(base + 2), Const(1.0f)}});     // base+3
  w->epilogue.push_back({ir::EwOp::kMul, {Val(base), Val(base + 3)}});       // base+4
  w->epilogue.push_back({ir::EwOp::kMul, {Val(base + 4), Const(0.5f)}});     // base+5
}

/// out[b, i, j] = sum_k A * B; unbatched operands are 2-D.
inline ir::Workload MatMul(int64_t batch, int64_t m, int64_t n, int64_t k, bool trans_a = false,
                           bool trans_b = false, bool a_batched = true, bool b_batched = true) {
  ir::Workload w;
  w.anchor = ir::AnchorKind::kMatMul;
  w.matmul = {batch, m, n, k, a_batched && batch > 1, b_batched && batch > 1, trans_a, trans_b};
  std::vector<int64_t> a_shape = trans_a ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k};
  std::vector<int64_t> b_shape = trans_b ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
  if (w.matmul.a_batched) a_shape.insert(a_shape.begin(), batch);
  if (w.matmul.b_batched) b_shape.insert(b_shape.begin(), batch);
  w.inputs = {Tensor(a_shape), Tensor(b_shape)};
  w.num_anchor_inputs = 2;
  w.output = batch > 1 ? Tensor({batch, m, n}) : Tensor({m, n});
  return w;
}

/// MatMul followed by + bias[n] and gelu.
inline ir::Workload MatMulBiasGelu(int64_t batch, int64_t m, int64_t n, int64_t k,
                                   bool trans_b = false) {
  ir::Workload w = MatMul(batch, m, n, k, false, trans_b);
  w.inputs.push_back(Tensor({n}));
  AddBiasGelu(&w, 2);
  return w;
}

inline ir::Workload RowWorkload(ir::AnchorKind anchor, int64_t rows, int64_t cols) {
  ir::Workload w;
  w.anchor = anchor;
  w.row.rows = rows;
  w.row.cols = cols;
  w.inputs = {Tensor({rows, cols})};
  if (anchor == ir::AnchorKind::kLayerNorm) {
    w.inputs.push_back(Tensor({cols}));
    w.inputs.push_back(Tensor({cols}));
  }
  w.num_anchor_inputs = static_cast<int>(w.inputs.size());
  w.output = anchor == ir::AnchorKind::kReduceMean ? Tensor({rows, 1}) : Tensor({rows, cols});
  return w;
}

/// Element-wise: out = relu((x + bias) * row_scale - scalar) with numpy broadcasting, where
/// x is `shape`, bias its last dim, row_scale [.., shape[-2], 1] and scalar [1].
inline ir::Workload Elementwise(const std::vector<int64_t>& shape) {
  ir::Workload w;
  w.anchor = ir::AnchorKind::kNone;
  w.num_anchor_inputs = 0;
  std::vector<int64_t> row_scale = shape;
  row_scale.back() = 1;
  if (row_scale.size() > 2) row_scale.erase(row_scale.begin());
  w.inputs = {Tensor(shape), Tensor({shape.back()}), Tensor(row_scale), Tensor({1})};
  w.output = Tensor(shape);
  w.epilogue = {{ir::EwOp::kAdd, {In(0), In(1)}},
                {ir::EwOp::kMul, {Val(0), In(2)}},
                {ir::EwOp::kSub, {Val(1), In(3)}},
                {ir::EwOp::kRelu, {Val(2)}}};
  return w;
}

}  // namespace gtco::schedule::testing
