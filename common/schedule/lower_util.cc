// Shared lowering helpers for sketches.
#include "common/schedule/lower_util.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gtco::schedule {

using ir::Expr;
using ir::ForKind;
using ir::MakeInt;
using ir::MakeVar;
using ir::Stmt;

std::string InputName(int input_idx) { return absl::StrCat("in", input_idx); }

std::vector<ir::BufferParam> KernelParams(const ir::Workload& w) {
  std::vector<ir::BufferParam> params;
  for (size_t input_idx = 0; input_idx < w.inputs.size(); ++input_idx) {
    params.push_back(
        {InputName(static_cast<int>(input_idx)), NumElements(w.inputs[input_idx].shape)});
  }
  params.push_back({kOutputName, NumElements(w.output.shape)});
  return params;
}

Stmt LoopOrSkip(const std::string& var, Expr min, Expr extent, ForKind kind, Stmt body) {
  if (extent->kind == ir::ExprKind::kIntImm && extent->int_value <= 0) return ir::MakeBlock({});
  return ir::MakeFor(var, std::move(min), std::move(extent), kind, std::move(body));
}

Stmt UnrolledSteps(const std::string& tag, const Expr& extent, int64_t unroll,
                   const std::function<Stmt(const Expr& step)>& update) {
  const std::string kq = tag + "_kq", kk = tag + "_kk", kr = tag + "_kr";
  const Expr main_steps = extent / ir::MakeInt(unroll);
  Stmt main_body =
      unroll > 1 ? ir::MakeFor(kk, ir::MakeInt(0), ir::MakeInt(unroll), ForKind::kUnrolled,
                               update(ir::MakeVar(kq) * ir::MakeInt(unroll) + ir::MakeVar(kk)))
                 : update(ir::MakeVar(kq));
  const Expr tail_begin = main_steps * ir::MakeInt(unroll);
  return ir::MakeBlock({LoopOrSkip(kq, ir::MakeInt(0), main_steps, ForKind::kSerial, main_body),
                        LoopOrSkip(kr, tail_begin, extent - tail_begin, ForKind::kSerial,
                                   update(ir::MakeVar(kr)))});
}

Stmt EmitVectorRange(const std::string& tag, const Expr& begin, const Expr& length, int64_t lanes,
                     int64_t unroll, const RangeBody& body) {
  const int64_t group = lanes * unroll;
  const Expr groups = length / MakeInt(group);
  const Expr group_var = MakeVar(tag + "_g");
  const Expr unroll_var = unroll > 1 ? MakeVar(tag + "_u") : MakeInt(0);
  const Expr lane_var = lanes > 1 ? MakeVar(tag + "_v") : MakeInt(0);
  const Expr slot = unroll_var * MakeInt(lanes) + lane_var;
  Stmt vector_body = body(begin + group_var * MakeInt(group) + slot, slot);
  if (lanes > 1) {
    vector_body =
        ir::MakeFor(tag + "_v", MakeInt(0), MakeInt(lanes), ForKind::kVectorized, vector_body);
  }
  if (unroll > 1) {
    vector_body =
        ir::MakeFor(tag + "_u", MakeInt(0), MakeInt(unroll), ForKind::kUnrolled, vector_body);
  }
  Stmt main_loop = LoopOrSkip(tag + "_g", MakeInt(0), groups, ForKind::kSerial, vector_body);
  if (lanes > 1 && length->kind == ir::ExprKind::kIntImm) {
    // A constant tail is vectorized too: whole vectors of `lanes`, then one short vector (LLVM
    // widens e.g. <5 x float> to one register), each lane on its own accumulator slot, instead
    // of a scalar loop whose exp/poly per element costs as much as a whole vector's.
    const int64_t done = length->int_value / group * group;
    const int64_t tail = length->int_value - done;
    std::vector<Stmt> steps = {main_loop};
    const Expr tail_lane = MakeVar(tag + "_tv");
    for (int64_t offset = 0; offset < tail; offset += lanes) {
      const int64_t width = std::min(lanes, tail - offset);
      const Expr tail_slot = MakeInt(offset) + tail_lane;
      steps.push_back(ir::MakeFor(tag + "_tv", MakeInt(0), MakeInt(width),
                                  width > 1 ? ForKind::kVectorized : ForKind::kSerial,
                                  body(begin + MakeInt(done) + tail_slot, tail_slot)));
    }
    return ir::MakeBlock(steps);
  }
  const Expr tail_begin = groups * MakeInt(group);
  const Expr tail_var = MakeVar(tag + "_t");
  Stmt tail_loop = LoopOrSkip(tag + "_t", tail_begin, length - tail_begin, ForKind::kSerial,
                              body(begin + tail_var, MakeInt(0)));
  return ir::MakeBlock({main_loop, tail_loop});
}

absl::Status CheckOneOf(const char* knob, int64_t value, const std::vector<int64_t>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("knob '", knob, "' = ", value, " is not one of {",
                                                 absl::StrJoin(allowed, ","), "}"));
}

absl::Status CheckRange(const char* knob, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("knob '", knob, "' = ", value, " is outside [", lo, ", ", hi, "]"));
}

bool VectorGroupFits(int64_t vw, int64_t unroll, int64_t extent, int max_lanes) {
  const bool narrowest = unroll == 1 && vw == VectorWidths(max_lanes).front();
  return narrowest || vw * unroll <= extent;
}

std::vector<int64_t> VectorWidths(int max_lanes) {
  std::vector<int64_t> widths;
  for (int64_t width : {4, 8, 16}) {
    if (width <= std::max(max_lanes, 4)) widths.push_back(width);
  }
  return widths;
}

std::vector<int64_t> VectorWidthsWidestFirst(int64_t extent, int max_lanes) {
  std::vector<int64_t> widths = VectorWidths(max_lanes);
  auto widest = widths.begin();
  for (auto width = widths.begin(); width != widths.end(); ++width) {
    if (*width <= extent) widest = width;
  }
  std::rotate(widths.begin(), widest, widest + 1);
  return widths;
}

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

}  // namespace gtco::schedule
