// Softmax sketch "softmax_rows/v1": per row, vectorized max / sum-of-exp / normalize passes.
// variant 0: three passes, exp recomputed in the last; 1: three passes, exp stored into the
// output by the sum pass and rescaled in place; 2: online two-pass (running max and rescaled
// sum per lane in one pass, then normalize).
#include <cfloat>
#include <cmath>
#include <vector>

#include "common/kernels/cpu/rows/row_sketch.h"
#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

using ir::Expr;
using ir::MakeFloat;
using ir::MakeLoad;
using ir::MakeStore;
using ir::Stmt;

Expr Exp(const Expr& x) { return ir::MakeCall("exp", {x}); }
Expr Add(const Expr& a, const Expr& b) { return a + b; }
Expr MaxOf(const Expr& a, const Expr& b) { return ir::Max(a, b); }

// Local buffers: "vacc"/"vmax" vector accumulators, "stat" = {row max, 1 / row sum}.
const char kStat[] = "stat";

class SoftmaxSketchImpl final : public RowSketchBase {
 public:
  const char* Name() const override { return "softmax_rows/v1"; }
  bool AppliesTo(const ir::Workload& w) const override {
    return w.anchor == ir::AnchorKind::kSoftmax;
  }

 protected:
  int NumVariants() const override { return 3; }

  absl::Status CheckShapes(const ir::Workload& w) const override {
    const int64_t count = w.row.rows * w.row.cols;
    if (w.inputs.empty() || NumElements(w.inputs[0].shape) != count ||
        NumElements(w.output.shape) != count ||
        (!w.output.shape.empty() && w.output.shape.back() != w.row.cols)) {
      return absl::InvalidArgumentError("softmax workload shapes disagree with rows x cols");
    }
    return absl::OkStatus();
  }

  Stmt LowerRow(const RowContext& ctx) const override {
    const int64_t slots = ctx.decisions.vw * ctx.decisions.unroll;
    std::vector<Stmt> steps;
    if (ctx.decisions.variant == 2) {
      steps.push_back(OnlineMaxSum(ctx));
    } else {
      steps.push_back(FillSlots("vacc", ctx.decisions, MakeFloat(-INFINITY)));
      steps.push_back(RowPass("pmax", ctx, [&](const Expr& col, const Expr& slot) {
        return MakeStore("vacc", slot, ir::Max(MakeLoad("vacc", slot), X(ctx, col)));
      }));
      steps.push_back(FoldSlots("vacc", ctx.decisions, kStat, 0, MaxOf));
      steps.push_back(FillSlots("vacc", ctx.decisions, MakeFloat(0.0)));
      const bool store_exp = ctx.decisions.variant == 1;
      steps.push_back(RowPass("psum", ctx, [&](const Expr& col, const Expr& slot) {
        const Expr e = Exp(X(ctx, col) - RowMax());
        Stmt accumulate = MakeStore("vacc", slot, MakeLoad("vacc", slot) + e);
        if (!store_exp) return accumulate;
        return ir::MakeBlock({MakeStore(kOutputName, RowIndex(ctx, col), e), accumulate});
      }));
      steps.push_back(FoldSlots("vacc", ctx.decisions, kStat, 1, Add));
    }
    steps.push_back(
        MakeStore(kStat, ir::MakeInt(1), MakeFloat(1.0) / MakeLoad(kStat, ir::MakeInt(1))));
    const bool reuse_exp = ctx.decisions.variant == 1;
    steps.push_back(RowPass("pnorm", ctx, [&](const Expr& col, const Expr& slot) {
      const Expr e =
          reuse_exp ? MakeLoad(kOutputName, RowIndex(ctx, col)) : Exp(X(ctx, col) - RowMax());
      const Expr value = e * MakeLoad(kStat, ir::MakeInt(1));
      return MakeStore(kOutputName, RowIndex(ctx, col), ctx.epilogue->Apply(value, ctx.row, col));
    }));
    Stmt body = ir::MakeBlock(steps);
    if (ctx.decisions.variant == 2) body = ir::MakeAllocate("vmax", slots, body);
    return ir::MakeAllocate(kStat, 2, ir::MakeAllocate("vacc", slots, body));
  }

 private:
  static Expr X(const RowContext& ctx, const Expr& col) {
    return MakeLoad(InputName(0), RowIndex(ctx, col));
  }
  static Expr RowMax() { return MakeLoad(kStat, ir::MakeInt(0)); }

  /// Per lane: m' = max(m, x); s' = s * exp(m - m') + exp(x - m'); then the lanes are merged
  /// into stat = {max, sum}. -FLT_MAX (not -inf) starts the max so exp(m - m') never sees
  /// inf - inf.
  static Stmt OnlineMaxSum(const RowContext& ctx) {
    std::vector<Stmt> steps;
    steps.push_back(FillSlots("vmax", ctx.decisions, MakeFloat(-FLT_MAX)));
    steps.push_back(FillSlots("vacc", ctx.decisions, MakeFloat(0.0)));
    steps.push_back(RowPass("ponl", ctx, [&](const Expr& col, const Expr& slot) {
      const Expr x = X(ctx, col);
      const Expr old_max = MakeLoad("vmax", slot);
      const Expr new_max = ir::Max(old_max, x);
      const Expr sum = MakeLoad("vacc", slot) * Exp(old_max - new_max) + Exp(x - new_max);
      return ir::MakeBlock({MakeStore("vacc", slot, sum), MakeStore("vmax", slot, new_max)});
    }));
    steps.push_back(FoldSlots("vmax", ctx.decisions, kStat, 0, MaxOf));
    const Expr lane = ir::MakeVar("lane");
    const Expr scaled = MakeLoad("vacc", lane) * Exp(MakeLoad("vmax", lane) - RowMax());
    steps.push_back(MakeStore(kStat, ir::MakeInt(1), MakeFloat(0.0)));
    steps.push_back(
        ir::MakeFor("lane", ir::MakeInt(0), ir::MakeInt(ctx.decisions.vw * ctx.decisions.unroll),
                    ir::ForKind::kSerial,
                    MakeStore(kStat, ir::MakeInt(1), MakeLoad(kStat, ir::MakeInt(1)) + scaled)));
    return ir::MakeBlock(steps);
  }
};

}  // namespace

const Sketch& SoftmaxSketch() {
  static const SoftmaxSketchImpl* const sketch = new SoftmaxSketchImpl();
  return *sketch;
}

const MappingSketch& VectorSoftmaxMapping() {
  static const VectorMapping* const mapping = new VectorMapping(SoftmaxSketch());
  return *mapping;
}

}  // namespace gtco::kernels
