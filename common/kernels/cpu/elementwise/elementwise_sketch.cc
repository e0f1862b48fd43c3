// Element-wise sketch "ew_flat/v1" (anchor none): the output viewed as [rows, last] after
// collapsing dimensions that broadcast alike, a task loop over row groups or column chunks
// (par_chunk elements per task; 0 = serial), and vectorized, unrolled inner loops.
#include <algorithm>

#include "common/kernels/family.h"
#include "common/schedule/epilogue.h"
#include "common/schedule/lower_util.h"
#include "common/schedule/sketch.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

using ir::Expr;
using ir::ForKind;
using ir::MakeInt;
using ir::MakeVar;
using ir::Stmt;

enum KnobIdx { kVw, kUnroll, kParChunk };
const std::vector<int64_t> kUnrolls = {1, 2, 4};
const std::vector<int64_t> kChunks = {4096, 16384, 65536};

/// The output and input shapes with size-1 output dims dropped and adjacent dims merged
/// when every used input either spans both or broadcasts over both.
struct CollapsedView {
  std::vector<int64_t> out_shape;
  std::vector<std::vector<int64_t>> input_shapes;
};

CollapsedView Collapse(const ir::Workload& w) {
  const std::vector<int64_t>& out = w.output.shape;
  const size_t rank = out.size();
  // full[p][d]: input p spans output dim d (after right alignment); false when broadcast.
  std::vector<std::vector<bool>> full(w.inputs.size(), std::vector<bool>(rank, false));
  for (size_t input_idx = 0; input_idx < w.inputs.size(); ++input_idx) {
    const std::vector<int64_t>& shape = w.inputs[input_idx].shape;
    for (size_t dim = 0; dim < rank; ++dim) {
      const int64_t offset = static_cast<int64_t>(dim + shape.size()) - static_cast<int64_t>(rank);
      full[input_idx][dim] = offset >= 0 && shape[offset] == out[dim] && out[dim] != 1;
    }
  }
  CollapsedView view;
  view.input_shapes.assign(w.inputs.size(), {});
  std::vector<bool> previous_pattern;
  for (size_t dim = 0; dim < rank; ++dim) {
    if (out[dim] == 1) continue;
    std::vector<bool> pattern;
    for (const auto& input_full : full) pattern.push_back(input_full[dim]);
    if (!view.out_shape.empty() && pattern == previous_pattern) {
      view.out_shape.back() *= out[dim];
      for (size_t input_idx = 0; input_idx < pattern.size(); ++input_idx) {
        if (pattern[input_idx]) view.input_shapes[input_idx].back() *= out[dim];
      }
    } else {
      view.out_shape.push_back(out[dim]);
      for (size_t input_idx = 0; input_idx < pattern.size(); ++input_idx) {
        view.input_shapes[input_idx].push_back(pattern[input_idx] ? out[dim] : 1);
      }
    }
    previous_pattern = pattern;
  }
  if (view.out_shape.empty()) {
    view.out_shape = {1};
    for (auto& shape : view.input_shapes) shape = {1};
  }
  return view;
}

absl::Status CheckBroadcasts(const ir::Workload& w) {
  // Validated on the real shapes; the collapsed view is then broadcast-equivalent.
  return EpilogueBuilder::Create(w).status();
}

class ElementwiseSketchImpl final : public LoopSketch {
 public:
  const char* Name() const override { return "ew_flat/v1"; }
  std::vector<std::string> KnobNames() const override { return {"vw", "unroll", "par_chunk"}; }
  bool AppliesTo(const ir::Workload& w) const override { return w.anchor == ir::AnchorKind::kNone; }

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const int64_t count = NumElements(w.output.shape);
    std::vector<int64_t> chunks = {0};
    for (int64_t chunk : kChunks) {
      if (hw.cores > 1 && chunk < count) chunks.push_back(chunk);
    }
    return {{"vw", VectorWidths(hw.MaxFloatLanes())}, {"unroll", kUnrolls}, {"par_chunk", chunks}};
  }

  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    const int64_t last = Collapse(w).out_shape.back();
    const bool narrowest =
        values[kUnroll] == 1 && values[kVw] == VectorWidths(hw.MaxFloatLanes()).front();
    return narrowest || values[kVw] * values[kUnroll] <= last;
  }

  absl::StatusOr<ir::LoweredFunc> Lower(const ir::Workload& w, const KnobValues& values,
                                        const std::string& func_name) const override {
    GTCO_RETURN_IF_ERROR(CheckOneOf("vw", values[kVw], {4, 8, 16}));
    GTCO_RETURN_IF_ERROR(CheckOneOf("unroll", values[kUnroll], kUnrolls));
    if (values[kParChunk] != 0) {
      GTCO_RETURN_IF_ERROR(CheckOneOf("par_chunk", values[kParChunk], kChunks));
    }
    GTCO_RETURN_IF_ERROR(CheckBroadcasts(w));
    CollapsedView view = Collapse(w);
    GTCO_ASSIGN_OR_RETURN(const EpilogueBuilder epilogue,
                          EpilogueBuilder::Create(w, view.out_shape, view.input_shapes));
    const int64_t last = view.out_shape.back();
    const int64_t rows = NumElements(view.out_shape) / last;
    const int64_t vw = values[kVw], unroll = values[kUnroll];
    auto row_range = [&](const Expr& row, const Expr& begin, const Expr& length) {
      return EmitVectorRange("e", begin, length, vw, unroll, [&](const Expr& col, const Expr&) {
        return ir::MakeStore(kOutputName, row * MakeInt(last) + col,
                             epilogue.Apply(ir::MakeFloat(0.0), row, col));
      });
    };
    const Expr task = MakeVar("task");
    Stmt body;
    const int64_t chunk = values[kParChunk];
    if (chunk == 0) {
      body = ir::MakeFor("row", MakeInt(0), MakeInt(rows), ForKind::kSerial,
                         row_range(MakeVar("row"), MakeInt(0), MakeInt(last)));
    } else if (last >= chunk) {
      // Column chunks of whole vector groups; a task is (row, chunk).
      const int64_t group = vw * unroll;
      const int64_t chunk_cols = (chunk + group - 1) / group * group;
      const int64_t chunks_per_row = (last + chunk_cols - 1) / chunk_cols;
      const Expr begin = (task % MakeInt(chunks_per_row)) * MakeInt(chunk_cols);
      body = ir::MakeFor("task", MakeInt(0), MakeInt(rows * chunks_per_row), ForKind::kParallel,
                         ir::MakeLet("row", task / MakeInt(chunks_per_row),
                                     row_range(MakeVar("row"), begin,
                                               Min(MakeInt(chunk_cols), MakeInt(last) - begin))));
    } else {
      // Groups of whole rows per task.
      const int64_t rows_per_task = chunk / last;
      const int64_t tasks = (rows + rows_per_task - 1) / rows_per_task;
      const Expr first_row = task * MakeInt(rows_per_task);
      body = ir::MakeFor(
          "task", MakeInt(0), MakeInt(tasks), ForKind::kParallel,
          ir::MakeFor("row", first_row, Min(MakeInt(rows_per_task), MakeInt(rows) - first_row),
                      ForKind::kSerial, row_range(MakeVar("row"), MakeInt(0), MakeInt(last))));
    }
    return ir::LoweredFunc{func_name, KernelParams(w), body};
  }
};

}  // namespace

const Sketch& ElementwiseSketch() {
  static const ElementwiseSketchImpl* const sketch = new ElementwiseSketchImpl();
  return *sketch;
}

const MappingSketch& VectorElementwiseMapping() {
  static const VectorMapping* const mapping = new VectorMapping(ElementwiseSketch());
  return *mapping;
}

}  // namespace gtco::kernels
