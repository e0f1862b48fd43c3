// Shared base of the row-wise sketches: knobs, pruning, the row loop and reduction helpers.
#include "common/kernels/cpu/rows/row_sketch.h"

#include <algorithm>

#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels {

using ir::Expr;
using ir::ForKind;
using ir::MakeInt;
using ir::MakeVar;
using ir::Stmt;

namespace {
const std::vector<int64_t> kRowUnrolls = {1, 2, 4};
}  // namespace

std::vector<std::string> RowSketchBase::KnobNames() const {
  std::vector<std::string> names = {"vw", "unroll", "par"};
  if (NumVariants() > 1) names.push_back("variant");
  return names;
}

std::vector<Knob> RowSketchBase::Knobs(const ir::Workload& w,
                                       const target::HardwareInfo& hw) const {
  std::vector<int64_t> par_values = {0};
  if (hw.cores > 1 && w.row.rows > 1 && w.row.rows * w.row.cols >= 4096) par_values = {1, 0};
  std::vector<Knob> knobs = {{"vw", VectorWidthsWidestFirst(w.row.cols, hw.MaxFloatLanes())},
                             {"unroll", kRowUnrolls},
                             {"par", par_values}};
  if (NumVariants() > 1) {
    std::vector<int64_t> variants;
    for (int variant = 0; variant < NumVariants(); ++variant) variants.push_back(variant);
    knobs.push_back({"variant", variants});
  }
  return knobs;
}

bool RowSketchBase::Admits(const ir::Workload& w, const target::HardwareInfo& hw,
                           const KnobValues& values) const {
  const int64_t vw = values[0], unroll = values[1];
  return VectorGroupFits(vw, unroll, w.row.cols, hw.MaxFloatLanes());
}

absl::StatusOr<ir::LoweredFunc> RowSketchBase::Lower(const ir::Workload& w,
                                                     const KnobValues& values,
                                                     const std::string& func_name) const {
  if (w.row.rows < 1 || w.row.cols < 1) {
    return absl::InvalidArgumentError("row workload needs positive rows and cols");
  }
  GTCO_RETURN_IF_ERROR(CheckShapes(w));
  RowDecisions decisions;
  decisions.vw = values[0];
  decisions.unroll = values[1];
  decisions.par = values[2];
  decisions.variant = NumVariants() > 1 ? values[3] : 0;
  GTCO_RETURN_IF_ERROR(CheckOneOf("vw", decisions.vw, {4, 8, 16}));
  GTCO_RETURN_IF_ERROR(CheckOneOf("unroll", decisions.unroll, kRowUnrolls));
  GTCO_RETURN_IF_ERROR(CheckRange("par", decisions.par, 0, 1));
  GTCO_RETURN_IF_ERROR(CheckRange("variant", decisions.variant, 0, std::max(NumVariants() - 1, 0)));
  GTCO_ASSIGN_OR_RETURN(const EpilogueBuilder epilogue, EpilogueBuilder::Create(w));
  const RowContext ctx{&w, &epilogue, decisions, MakeVar("row"), w.row.cols};
  Stmt body =
      ir::MakeFor("row", MakeInt(0), MakeInt(w.row.rows),
                  decisions.par == 1 ? ForKind::kParallel : ForKind::kSerial, LowerRow(ctx));
  return ir::LoweredFunc{func_name, KernelParams(w), body};
}

Stmt FillSlots(const std::string& buffer, const RowDecisions& d, const Expr& value) {
  const Expr slot = MakeVar(buffer + "_fu") * MakeInt(d.vw) + MakeVar(buffer + "_fv");
  return ir::MakeFor(buffer + "_fu", MakeInt(0), MakeInt(d.unroll), ForKind::kUnrolled,
                     ir::MakeFor(buffer + "_fv", MakeInt(0), MakeInt(d.vw), ForKind::kVectorized,
                                 ir::MakeStore(buffer, slot, value)));
}

Stmt FoldSlots(const std::string& buffer, const RowDecisions& d, const std::string& dest,
               int64_t dest_idx, const std::function<Expr(const Expr&, const Expr&)>& fold) {
  const Expr slot = MakeVar(buffer + "_h");
  const Expr dest_value = ir::MakeLoad(dest, MakeInt(dest_idx));
  return ir::MakeBlock(
      {ir::MakeStore(dest, MakeInt(dest_idx), ir::MakeLoad(buffer, MakeInt(0))),
       ir::MakeFor(
           buffer + "_h", MakeInt(1), MakeInt(d.vw * d.unroll - 1), ForKind::kSerial,
           ir::MakeStore(dest, MakeInt(dest_idx), fold(dest_value, ir::MakeLoad(buffer, slot))))});
}

Stmt RowPass(const std::string& tag, const RowContext& ctx, const RangeBody& body) {
  return EmitVectorRange(tag, MakeInt(0), MakeInt(ctx.cols), ctx.decisions.vw, ctx.decisions.unroll,
                         body);
}

Expr RowIndex(const RowContext& ctx, const Expr& column) {
  return ctx.row * MakeInt(ctx.cols) + column;
}

}  // namespace gtco::kernels
