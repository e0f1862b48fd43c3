// Shared base of the row-wise sketches (softmax, layernorm, reduce_mean): one row per iteration
// of a (parallel) row loop, vectorized passes over the row with vector accumulators in local
// buffers, horizontal reductions, scalar tails. Knobs: vw, unroll, par[, variant].
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/kernels/family.h"
#include "common/schedule/epilogue.h"
#include "common/schedule/lower_util.h"
#include "common/schedule/sketch.h"

namespace gtco::kernels {

/// Decisions shared by the row sketches.
struct RowDecisions {
  int64_t vw = 4;       ///< vector lanes
  int64_t unroll = 1;   ///< independent vector accumulators per step
  int64_t par = 0;      ///< 1: rows run in parallel
  int64_t variant = 0;  ///< sketch-specific algorithm choice
};

/// What a row sketch lowers one row with.
struct RowContext {
  const ir::Workload* workload;
  const EpilogueBuilder* epilogue;
  RowDecisions decisions;
  ir::Expr row;  ///< the row loop variable
  int64_t cols;
};

class RowSketchBase : public LoopSketch {
 public:
  std::vector<std::string> KnobNames() const override;
  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override;
  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override;
  absl::StatusOr<ir::LoweredFunc> Lower(const ir::Workload& w, const KnobValues& values,
                                        const std::string& func_name) const override;

 protected:
  /// Number of algorithm variants (0 or 1: no "variant" knob).
  virtual int NumVariants() const = 0;
  /// Checks input/output shapes against w.row (INVALID_ARGUMENT otherwise).
  virtual absl::Status CheckShapes(const ir::Workload& w) const = 0;
  /// The statements computing one row.
  virtual ir::Stmt LowerRow(const RowContext& ctx) const = 0;
};

/// Local-buffer helpers for row bodies.
/// buffer[slot] = value for every slot of an unroll x lanes accumulator.
ir::Stmt FillSlots(const std::string& buffer, const RowDecisions& d, const ir::Expr& value);
/// dest[dest_idx] = fold(...fold(buffer[0], buffer[1])..., buffer[n-1]) over all accumulator slots.
ir::Stmt FoldSlots(const std::string& buffer, const RowDecisions& d, const std::string& dest,
                   int64_t dest_idx,
                   const std::function<ir::Expr(const ir::Expr&, const ir::Expr&)>& fold);
/// A strip-mined pass over the row's columns; body(column, slot).
ir::Stmt RowPass(const std::string& tag, const RowContext& ctx, const RangeBody& body);
/// Flat index of (row, column) in a [rows, cols] tensor.
ir::Expr RowIndex(const RowContext& ctx, const ir::Expr& column);

}  // namespace gtco::kernels
