// Epilogue lowering shared by every sketch: turns a workload's element-wise epilogue into an IR
// expression at one output element, with numpy broadcasting of its extra inputs.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/loop_ir.h"
#include "common/ir/workload.h"

namespace gtco::schedule {

/// Builds epilogue expressions. An output element is addressed as (row, last): `last` indexes
/// the output's last dimension, `row` the leading dimensions flattened (row-major), so the flat
/// index is row * last_dim + last. Index math stays affine in `last`, which keeps loads of
/// full-shape, per-column (bias) and scalar inputs contiguous or uniform in vector loops.
class EpilogueBuilder {
 public:
  /// Uses the workload's own output and input shapes. INVALID_ARGUMENT when an operand refers
  /// to a missing input or value, or an input does not broadcast to the output shape.
  static absl::StatusOr<EpilogueBuilder> Create(const ir::Workload& w);
  /// Same, over a broadcast-equivalent view: `out_shape` and `input_shapes` (one per workload
  /// input) with the same element counts (e.g. after collapsing dimensions).
  static absl::StatusOr<EpilogueBuilder> Create(const ir::Workload& w,
                                                std::vector<int64_t> out_shape,
                                                std::vector<std::vector<int64_t>> input_shapes);

  /// True when the workload has no epilogue (Apply returns `acc`).
  bool empty() const { return workload_->epilogue.empty(); }
  /// The epilogue's fp32 value at (row, last) given the anchor value `acc`.
  ir::Expr Apply(const ir::Expr& acc, const ir::Expr& row, const ir::Expr& last) const;
  /// Flat element index into input `input_idx` at output element (row, last).
  ir::Expr InputIndex(int input_idx, const ir::Expr& row, const ir::Expr& last) const;

 private:
  EpilogueBuilder(const ir::Workload* w, std::vector<int64_t> out_shape,
                  std::vector<std::vector<int64_t>> input_shapes)
      : workload_(w), out_shape_(std::move(out_shape)), input_shapes_(std::move(input_shapes)) {}

  const ir::Workload* workload_;                    ///< not owned; must outlive the builder
  std::vector<int64_t> out_shape_;                  ///< rank >= 1
  std::vector<std::vector<int64_t>> input_shapes_;  ///< right-aligned to out_shape_'s rank
};

/// Right-aligns `shape` to the rank of `out_shape` (leading 1s added or dropped) into `aligned`;
/// false when a dropped leading dim is not 1 or a dim neither equals the output's nor is 1
/// (numpy broadcasting).
bool AlignToOutput(const std::vector<int64_t>& shape, const std::vector<int64_t>& out_shape,
                   std::vector<int64_t>* aligned);

/// Epilogue input `index` of conv workload `w` over the conv's GEMM view [N, K, OH*OW]: its
/// shape there, [n, k, OH*OW or 1] (it must broadcast over both spatial dims or neither).
/// INVALID_ARGUMENT naming the input otherwise.
absl::StatusOr<std::vector<int64_t>> ConvEpilogueInputShape(const ir::Workload& w, size_t index);

/// The epilogue of conv workload `w` over its view [N, K, OH*OW] (Apply(acc, plane n*K + k,
/// pixel oh*OW + ow)): an extra input broadcasts over both spatial dims or over neither
/// (full-shape residuals, per-channel biases, scalars).
absl::StatusOr<EpilogueBuilder> ConvEpilogue(const ir::Workload& w);

/// The IR form of one element-wise op (`b` ignored for unary ops); matches ir::EvalEwOp.
ir::Expr LowerEwOp(ir::EwOp op, const ir::Expr& a, const ir::Expr& b);

}  // namespace gtco::schedule
