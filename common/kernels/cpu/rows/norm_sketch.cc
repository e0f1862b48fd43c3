// Row-statistics sketches: layernorm "layernorm_rows/v1" (variant 0: two-pass mean then
// variance; 1: one-pass sum and sum of squares) and reduce_mean "reduce_mean_rows/v1".
#include "common/kernels/cpu/rows/row_sketch.h"
#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

using ir::Expr;
using ir::MakeFloat;
using ir::MakeInt;
using ir::MakeLoad;
using ir::MakeStore;
using ir::Stmt;

Expr Add(const Expr& a, const Expr& b) { return a + b; }

/// The [rows, cols] input 0 at (row, col).
Expr X(const RowContext& ctx, const Expr& col) {
  return MakeLoad(InputName(0), RowIndex(ctx, col));
}

// Local buffer "stat": {mean, 1 / sqrt(var + eps)} (layernorm), {sum} (reduce_mean).
const char kStat[] = "stat";

class LayerNormSketchImpl final : public RowSketchBase {
 public:
  const char* Name() const override { return "layernorm_rows/v1"; }
  bool AppliesTo(const ir::Workload& w) const override {
    return w.anchor == ir::AnchorKind::kLayerNorm;
  }

 protected:
  int NumVariants() const override { return 2; }

  absl::Status CheckShapes(const ir::Workload& w) const override {
    const int64_t count = w.row.rows * w.row.cols;
    if (w.inputs.size() < 3 || NumElements(w.inputs[0].shape) != count ||
        NumElements(w.inputs[1].shape) != w.row.cols ||
        NumElements(w.inputs[2].shape) != w.row.cols || NumElements(w.output.shape) != count ||
        (!w.output.shape.empty() && w.output.shape.back() != w.row.cols)) {
      return absl::InvalidArgumentError(
          "layernorm workload shapes disagree with X [rows, cols], scale [cols], bias [cols]");
    }
    return absl::OkStatus();
  }

  Stmt LowerRow(const RowContext& ctx) const override {
    const Expr inv_cols = MakeFloat(1.0 / static_cast<double>(ctx.cols));
    const Expr mean = MakeLoad(kStat, MakeInt(0));
    std::vector<Stmt> steps;
    steps.push_back(FillSlots("vsum", ctx.decisions, MakeFloat(0.0)));
    Expr variance;
    if (ctx.decisions.variant == 0) {
      steps.push_back(RowPass("psum", ctx, [&](const Expr& col, const Expr& slot) {
        return MakeStore("vsum", slot, MakeLoad("vsum", slot) + X(ctx, col));
      }));
      steps.push_back(FoldSlots("vsum", ctx.decisions, kStat, 0, Add));
      steps.push_back(MakeStore(kStat, MakeInt(0), mean * inv_cols));
      steps.push_back(FillSlots("vsum", ctx.decisions, MakeFloat(0.0)));
      steps.push_back(RowPass("pvar", ctx, [&](const Expr& col, const Expr& slot) {
        const Expr centered = X(ctx, col) - mean;
        return MakeStore("vsum", slot, MakeLoad("vsum", slot) + centered * centered);
      }));
      steps.push_back(FoldSlots("vsum", ctx.decisions, kStat, 1, Add));
      variance = MakeLoad(kStat, MakeInt(1)) * inv_cols;
    } else {
      steps.push_back(FillSlots("vsq", ctx.decisions, MakeFloat(0.0)));
      steps.push_back(RowPass("pmom", ctx, [&](const Expr& col, const Expr& slot) {
        const Expr x = X(ctx, col);
        return ir::MakeBlock({MakeStore("vsum", slot, MakeLoad("vsum", slot) + x),
                              MakeStore("vsq", slot, MakeLoad("vsq", slot) + x * x)});
      }));
      steps.push_back(FoldSlots("vsum", ctx.decisions, kStat, 0, Add));
      steps.push_back(FoldSlots("vsq", ctx.decisions, kStat, 1, Add));
      steps.push_back(MakeStore(kStat, MakeInt(0), mean * inv_cols));
      // E[x^2] - mean^2 can round below zero.
      variance = ir::Max(MakeLoad(kStat, MakeInt(1)) * inv_cols - mean * mean, MakeFloat(0.0));
    }
    const Expr epsilon = MakeFloat(ctx.workload->row.epsilon);
    steps.push_back(
        MakeStore(kStat, MakeInt(1), MakeFloat(1.0) / ir::MakeCall("sqrt", {variance + epsilon})));
    steps.push_back(RowPass("pnorm", ctx, [&](const Expr& col, const Expr& slot) {
      const Expr normalized = (X(ctx, col) - mean) * MakeLoad(kStat, MakeInt(1));
      const Expr value = normalized * MakeLoad(InputName(1), col) + MakeLoad(InputName(2), col);
      return MakeStore(kOutputName, RowIndex(ctx, col), ctx.epilogue->Apply(value, ctx.row, col));
    }));
    const int64_t slots = ctx.decisions.vw * ctx.decisions.unroll;
    Stmt body = ir::MakeAllocate("vsum", slots, ir::MakeBlock(steps));
    if (ctx.decisions.variant == 1) body = ir::MakeAllocate("vsq", slots, body);
    return ir::MakeAllocate(kStat, 2, body);
  }
};

class ReduceMeanSketchImpl final : public RowSketchBase {
 public:
  const char* Name() const override { return "reduce_mean_rows/v1"; }
  bool AppliesTo(const ir::Workload& w) const override {
    return w.anchor == ir::AnchorKind::kReduceMean;
  }

 protected:
  int NumVariants() const override { return 1; }

  absl::Status CheckShapes(const ir::Workload& w) const override {
    if (w.inputs.empty() || NumElements(w.inputs[0].shape) != w.row.rows * w.row.cols ||
        NumElements(w.output.shape) != w.row.rows ||
        (!w.output.shape.empty() && w.output.shape.back() != 1 && w.row.rows != 1)) {
      return absl::InvalidArgumentError(
          "reduce_mean workload shapes disagree with X [rows, cols] -> [rows, 1]");
    }
    return absl::OkStatus();
  }

  Stmt LowerRow(const RowContext& ctx) const override {
    std::vector<Stmt> steps;
    steps.push_back(FillSlots("vsum", ctx.decisions, MakeFloat(0.0)));
    steps.push_back(RowPass("psum", ctx, [&](const Expr& col, const Expr& slot) {
      return MakeStore("vsum", slot, MakeLoad("vsum", slot) + X(ctx, col));
    }));
    steps.push_back(FoldSlots("vsum", ctx.decisions, kStat, 0, Add));
    const Expr mean = MakeLoad(kStat, MakeInt(0)) * MakeFloat(1.0 / static_cast<double>(ctx.cols));
    steps.push_back(
        MakeStore(kOutputName, ctx.row, ctx.epilogue->Apply(mean, ctx.row, MakeInt(0))));
    const int64_t slots = ctx.decisions.vw * ctx.decisions.unroll;
    return ir::MakeAllocate(kStat, 1, ir::MakeAllocate("vsum", slots, ir::MakeBlock(steps)));
  }
};

}  // namespace

const Sketch& LayerNormSketch() {
  static const LayerNormSketchImpl* const sketch = new LayerNormSketchImpl();
  return *sketch;
}

const Sketch& ReduceMeanSketch() {
  static const ReduceMeanSketchImpl* const sketch = new ReduceMeanSketchImpl();
  return *sketch;
}

const MappingSketch& VectorLayerNormMapping() {
  static const VectorMapping* const mapping = new VectorMapping(LayerNormSketch());
  return *mapping;
}

const MappingSketch& VectorReduceMeanMapping() {
  static const VectorMapping* const mapping = new VectorMapping(ReduceMeanSketch());
  return *mapping;
}

}  // namespace gtco::kernels
