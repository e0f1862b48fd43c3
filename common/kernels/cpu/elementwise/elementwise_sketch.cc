// Element-wise sketch "ew_flat/v1" (anchor none): the output viewed as [rows, last] after
// collapsing dimensions that broadcast alike, a task loop over row groups or column chunks
// (par_chunk elements per task; 0 = serial), and vectorized, unrolled inner loops.
#include <algorithm>

#include "common/kernels/broadcast.h"
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
/// Outputs of at least this many elements run over the cores by default.
constexpr int64_t kParallelFrom = 32768;
/// Tasks per core a default chunk leaves at least (a late core takes fewer).
constexpr int64_t kTasksPerCore = 4;

absl::Status CheckBroadcasts(const ir::Workload& w) {
  // Validated on the real shapes; the collapsed view is then broadcast-equivalent.
  return EpilogueBuilder::Create(w).status();
}

class ElementwiseSketchImpl final : public LoopSketch {
 public:
  const char* Name() const override { return "ew_flat/v1"; }
  std::vector<std::string> KnobNames() const override { return {"vw", "unroll", "par_chunk"}; }
  bool AppliesTo(const ir::Workload& w) const override { return w.anchor == ir::AnchorKind::kNone; }

  /// Defaults (what an untuned export and a task's first trial run): the widest vector a row
  /// of the collapsed view fills, and from kParallelFrom elements on the largest chunk that
  /// gives every core kTasksPerCore tasks. Serial 4-lane vectors, the defaults before, ran
  /// SegFormer's standalone GELUs (401K elements, erf inline) at 2.9 GB/s: a third of its run.
  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const int64_t count = NumElements(w.output.shape);
    Knob par_chunk{"par_chunk", {0}};
    int64_t preferred = 0;
    for (int64_t chunk : kChunks) {
      if (hw.cores <= 1 || chunk >= count) continue;
      par_chunk.values.push_back(chunk);
      if (count >= kParallelFrom && count >= kTasksPerCore * hw.cores * chunk) preferred = chunk;
    }
    Prefer(par_chunk, preferred);
    const int64_t last = CollapseBroadcastDims(w).out.back();
    return {
        {"vw", VectorWidthsWidestFirst(last, hw.MaxFloatLanes())}, {"unroll", kUnrolls}, par_chunk};
  }

  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    const int64_t last = CollapseBroadcastDims(w).out.back();
    return VectorGroupFits(values[kVw], values[kUnroll], last, hw.MaxFloatLanes());
  }

  absl::StatusOr<ir::LoweredFunc> Lower(const ir::Workload& w, const KnobValues& values,
                                        const std::string& func_name) const override {
    GTCO_RETURN_IF_ERROR(CheckOneOf("vw", values[kVw], {4, 8, 16}));
    GTCO_RETURN_IF_ERROR(CheckOneOf("unroll", values[kUnroll], kUnrolls));
    if (values[kParChunk] != 0) {
      GTCO_RETURN_IF_ERROR(CheckOneOf("par_chunk", values[kParChunk], kChunks));
    }
    GTCO_RETURN_IF_ERROR(CheckBroadcasts(w));
    CollapsedShapes view = CollapseBroadcastDims(w);
    GTCO_ASSIGN_OR_RETURN(const EpilogueBuilder epilogue,
                          EpilogueBuilder::Create(w, view.out, view.inputs));
    const int64_t last = view.out.back();
    const int64_t rows = NumElements(view.out) / last;
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
