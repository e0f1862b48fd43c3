// Pooling sketch "pool_vec/v1" (anchor pool): a (parallel) loop over the N*C planes, a loop over
// output rows, and output columns in vectors of vw lanes (unrolled by `unroll`); every tap of
// the window is unrolled, its reads outside the image masked (the load goes to a clamped
// address; only in the border columns that reach the padding), a max or a sum divided by the
// taps counted; the epilogue fused into the store.
#include <algorithm>
#include <limits>
#include <vector>

#include "common/ir/pool.h"
#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

using ir::Expr;
using ir::ForKind;
using ir::MakeInt;
using ir::MakeVar;
using ir::Stmt;

enum KnobIdx { kVw, kUnroll, kPar };
const std::vector<int64_t> kUnrolls = {1, 2};

Expr Lt(const Expr& a, const Expr& b) { return ir::MakeBinary(ir::ExprKind::kLt, a, b); }
Expr Le(const Expr& a, const Expr& b) { return ir::MakeBinary(ir::ExprKind::kLe, a, b); }
Expr And(const Expr& a, const Expr& b) { return ir::MakeBinary(ir::ExprKind::kAnd, a, b); }

/// lo <= index < hi, folded away when statically true.
Expr Within(const Expr& index, int64_t lo, int64_t hi, bool always) {
  return always ? nullptr : And(Le(MakeInt(lo), index), Lt(index, MakeInt(hi)));
}

Expr AndMaybe(const Expr& a, const Expr& b) {
  if (a == nullptr) return b;
  if (b == nullptr) return a;
  return And(a, b);
}

class PoolSketchImpl final : public LoopSketch {
 public:
  const char* Name() const override { return "pool_vec/v1"; }
  std::vector<std::string> KnobNames() const override { return {"vw", "unroll", "par"}; }
  bool AppliesTo(const ir::Workload& w) const override { return w.anchor == ir::AnchorKind::kPool; }

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const bool parallel = hw.cores > 1 && w.pool.batch * w.pool.channels > 1;
    return {{"vw", VectorWidthsWidestFirst(ir::PoolOutW(w.pool), hw.MaxFloatLanes())},
            {"unroll", kUnrolls},
            {"par", parallel ? std::vector<int64_t>{1, 0} : std::vector<int64_t>{0}}};
  }

  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    return VectorGroupFits(values[kVw], values[kUnroll], ir::PoolOutW(w.pool),
                           hw.MaxFloatLanes());
  }

  absl::StatusOr<ir::LoweredFunc> Lower(const ir::Workload& w, const KnobValues& values,
                                        const std::string& func_name) const override {
    GTCO_RETURN_IF_ERROR(CheckOneOf("vw", values[kVw], {4, 8, 16}));
    GTCO_RETURN_IF_ERROR(CheckOneOf("unroll", values[kUnroll], kUnrolls));
    GTCO_RETURN_IF_ERROR(CheckRange("par", values[kPar], 0, 1));
    GTCO_RETURN_IF_ERROR(w.Validate());
    if (w.anchor != ir::AnchorKind::kPool) {
      return absl::InvalidArgumentError("the pool sketch lowers pool workloads only");
    }
    const ir::PoolParams& p = w.pool;
    GTCO_ASSIGN_OR_RETURN(const EpilogueBuilder epilogue, EpilogueBuilder::Create(w));
    const int64_t out_h = ir::PoolOutH(p), out_w = ir::PoolOutW(p);
    const Expr plane = MakeVar("plane"), oh = MakeVar("oh");
    const bool pad_h = p.pad_top > 0 || p.pad_bottom > 0 || p.ceil_mode;
    const bool pad_w = p.pad_left > 0 || p.pad_right > 0 || p.ceil_mode;
    // Output columns whose whole window lies inside the image in w need no clamp there: their
    // loads are (strided) ramps, not gathers. Only the few columns at each border read padding.
    int64_t interior_begin = 0, interior_end = out_w;
    if (pad_w) {
      interior_begin = std::min(out_w, (p.pad_left + p.stride_w - 1) / p.stride_w);
      const int64_t last_start = p.in_w - 1 - (p.kernel_w - 1) * p.dilation_w + p.pad_left;
      interior_end = last_start < 0 ? 0 : std::min(out_w, last_start / p.stride_w + 1);
      interior_end = std::max(interior_end, interior_begin);
    }
    auto columns = [&](bool clamp_w, const Expr& ow) {
      Expr best = ir::MakeFloat(-std::numeric_limits<double>::infinity());
      Expr sum = ir::MakeFloat(0.0), count = ir::MakeFloat(0.0);
      for (int64_t r = 0; r < p.kernel_h; ++r) {
        const Expr ih = oh * MakeInt(p.stride_h) + MakeInt(r * p.dilation_h - p.pad_top);
        for (int64_t s = 0; s < p.kernel_w; ++s) {
          const Expr iw = ow * MakeInt(p.stride_w) + MakeInt(s * p.dilation_w - p.pad_left);
          const Expr inside = AndMaybe(Within(ih, 0, p.in_h, !pad_h),
                                       Within(iw, 0, p.in_w, !clamp_w));
          const Expr address =
              plane * MakeInt(p.in_h * p.in_w) +
              (pad_h ? ir::Max(MakeInt(0), ir::Min(ih, MakeInt(p.in_h - 1))) : ih) *
                  MakeInt(p.in_w) +
              (clamp_w ? ir::Max(MakeInt(0), ir::Min(iw, MakeInt(p.in_w - 1))) : iw);
          const Expr value = ir::MakeLoad(InputName(0), address);
          if (p.max) {
            best = ir::Max(best, inside == nullptr
                                     ? value
                                     : ir::MakeSelect(inside, value, ir::MakeFloat(
                                           -std::numeric_limits<double>::infinity())));
            continue;
          }
          sum = sum + (inside == nullptr ? value
                                         : ir::MakeSelect(inside, value, ir::MakeFloat(0.0)));
          const Expr counted =
              p.count_include_pad
                  ? AndMaybe(Within(ih, -p.pad_top, p.in_h + p.pad_bottom, !p.ceil_mode),
                             Within(iw, -p.pad_left, p.in_w + p.pad_right, !p.ceil_mode))
                  : inside;
          count = count + (counted == nullptr ? ir::MakeFloat(1.0)
                                              : ir::MakeSelect(counted, ir::MakeFloat(1.0),
                                                               ir::MakeFloat(0.0)));
        }
      }
      const Expr pooled = p.max ? best : sum / count;
      const Expr row = plane * MakeInt(out_h) + oh;
      return ir::MakeStore(kOutputName, row * MakeInt(out_w) + ow,
                           epilogue.Apply(pooled, row, ow));
    };
    std::vector<Stmt> ranges;
    auto range = [&](const char* tag, int64_t begin, int64_t end, bool clamp_w) {
      if (end <= begin) return;
      ranges.push_back(EmitVectorRange(tag, MakeInt(begin), MakeInt(end - begin), values[kVw],
                                       values[kUnroll],
                                       [&columns, clamp_w](const Expr& ow, const Expr&) {
                                         return columns(clamp_w, ow);
                                       }));
    };
    range("pl", 0, interior_begin, true);
    range("p", interior_begin, interior_end, false);
    range("pr", interior_end, out_w, true);
    Stmt body = ir::MakeFor("oh", MakeInt(0), MakeInt(out_h), ForKind::kSerial,
                            ir::MakeBlock(ranges));
    body = ir::MakeFor("plane", MakeInt(0), MakeInt(p.batch * p.channels),
                       values[kPar] == 1 ? ForKind::kParallel : ForKind::kSerial, body);
    return ir::LoweredFunc{func_name, KernelParams(w), body};
  }
};

}  // namespace

const Sketch& PoolSketch() {
  static const PoolSketchImpl* const sketch = new PoolSketchImpl();
  return *sketch;
}

const MappingSketch& VectorPoolMapping() {
  static const VectorMapping* const mapping = new VectorMapping(PoolSketch());
  return *mapping;
}

}  // namespace gtco::kernels
