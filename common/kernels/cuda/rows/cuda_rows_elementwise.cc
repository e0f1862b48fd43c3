// CUDA element-wise sketch "cuda_elementwise/v1" (anchor none) and its "simt" mapping: the output
// collapsed to [rows, last], each thread computing `ept` vector groups of `vw` consecutive
// elements (one block-stride apart) per grid-stride step, `iters` steps per thread.
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/kernels/cuda/rows/cuda_rows_sketch.h"
#include "common/kernels/cuda/rows/cuda_rows_util.h"
#include "common/kernels/family.h"
#include "common/schedule/cuda_sketch.h"
#include "common/schedule/lower_util.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

const std::vector<int64_t> kBlocks = {32, 64, 128, 256, 512, 1024};
const std::vector<int64_t> kVectorWidths = {1, 2, 4, 8};
const std::vector<int64_t> kGroupsPerThread = {1, 2, 4, 8};
const std::vector<int64_t> kItersPerThread = {1, 4, 16};
enum KnobIdx { kBlockKnob, kVwKnob, kEptKnob, kItersKnob };

/// Widest element among the output and the inputs read with vector loads (those spanning the
/// collapsed view's last dim), in bytes.
int64_t WidestVectorElement(const ir::Workload& w, const CollapsedShapes& view) {
  int64_t widest = ir::DTypeSize(w.output.dtype);
  for (int input_idx : EpilogueInputs(w)) {
    if (view.inputs[input_idx].back() != 1) {
      widest = std::max(widest, ir::DTypeSize(w.inputs[input_idx].dtype));
    }
  }
  return widest;
}

int EstimateElementwiseRegisters(const ir::Workload& w, const CollapsedShapes& view,
                                 const CudaElementwiseConfig& c) {
  int64_t prefetched = 0;
  for (int input_idx : EpilogueInputs(w)) {
    prefetched += view.inputs[input_idx].back() != 1 ? c.vector_width : 1;
  }
  const bool wide_index = c.elements >= (int64_t{1} << 30);
  const int64_t registers = 18 + c.groups_per_thread * (prefetched + 1) + c.vector_width +
                            std::min<int64_t>(static_cast<int64_t>(w.epilogue.size()), 8) +
                            (wide_index ? 6 : 0);
  return static_cast<int>(std::min<int64_t>(registers, 1 << 20));
}

class CudaElementwiseSketch final : public CudaSketch {
 public:
  const char* Name() const override { return "cuda_elementwise/v1"; }
  CudaGenerator Generator() const override { return &GenerateCudaElementwise; }
  std::vector<std::string> KnobNames() const override { return CudaElementwiseKnobNames(); }
  bool AppliesTo(const ir::Workload& w) const override { return w.anchor == ir::AnchorKind::kNone; }

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    std::vector<Knob> knobs = {{"block", kBlocks},
                               {"vw", kVectorWidths},
                               {"ept", kGroupsPerThread},
                               {"iters", kItersPerThread}};
    const CollapsedShapes view = CollapseBroadcastDims(w);
    const int64_t last = view.out.back();
    int64_t vw = 1;
    for (int64_t width : kVectorWidths) {
      if (last % width == 0 && width * WidestVectorElement(w, view) <= 16) vw = width;
    }
    // 256 threads and up to 4 groups per thread while the grid keeps 4 blocks per SM; 128
    // threads when 256 leave fewer than 2 blocks per SM.
    const int64_t groups = NumElements(view.out) / vw;
    const int64_t sm_count = std::max(hw.sm_count, 1);
    int64_t block = 256, ept = 1;
    if ((groups + block - 1) / block < 2 * sm_count) block = 128;
    while (ept < 4 && (groups + block * ept * 2 - 1) / (block * ept * 2) >= 4 * sm_count) ept *= 2;
    SortByPreference(&knobs[kBlockKnob].values, block);
    SortByPreference(&knobs[kVwKnob].values, vw);
    SortByPreference(&knobs[kEptKnob].values, ept);
    MoveFirstAdmittedToFront(
        &knobs, {kVwKnob, kBlockKnob, kEptKnob, kItersKnob},
        [&](const KnobValues& values) { return PruneRule(w, hw, values) == nullptr; });
    return knobs;
  }

  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    return PruneRule(w, hw, values) == nullptr;
  }

  const char* PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                        const KnobValues& values) const override {
    absl::StatusOr<CudaElementwiseConfig> decoded = DecodeCudaElementwise(w, values);
    if (!decoded.ok()) return "other";
    const CudaElementwiseConfig& c = *decoded;
    if (const char* rule = CudaResourceRule(hw, Plan(w, values))) return rule;
    const CollapsedShapes view = CollapseBroadcastDims(w);
    if (c.last % c.vector_width != 0 || c.vector_width * WidestVectorElement(w, view) > 16) {
      return "alignment";
    }
    if (c.block > std::max<int64_t>(32, PowerOfTwoCeil(c.groups)) ||
        (c.groups_per_thread > 1 && c.groups <= int64_t{c.block} * (c.groups_per_thread / 2))) {
      return "exceeds_shape";
    }
    const int64_t step = c.GroupsPerBlockStep() * c.iters;
    if (c.iters > 1 && (c.groups + step - 1) / step < std::max(hw.sm_count, 1)) {
      return "too_small_to_parallelize";  // looping while the grid leaves SMs idle
    }
    return nullptr;
  }

  CudaPlan Plan(const ir::Workload& w, const KnobValues& values) const override {
    CudaPlan plan;
    absl::StatusOr<CudaElementwiseConfig> decoded = DecodeCudaElementwise(w, values);
    if (!decoded.ok()) {
      plan.block_x = 0;  // rejected by CudaResourceRule
      return plan;
    }
    const CudaElementwiseConfig& c = *decoded;
    const int64_t step = c.GroupsPerBlockStep() * c.iters;
    plan.grid_x = std::clamp<int64_t>((c.groups + step - 1) / step, 1, kCudaMaxGridX);
    plan.block_x = c.block;
    plan.est_registers = EstimateElementwiseRegisters(w, CollapseBroadcastDims(w), c);
    plan.vector_width = c.vector_width;
    plan.stages = 1;
    return plan;
  }
};

class SimtElementwiseMapping final : public CudaMappingSketch {
 public:
  const char* Name() const override { return "simt"; }
  const CudaSketch& cuda_sketch() const override {
    static const CudaElementwiseSketch* const sketch = new CudaElementwiseSketch();
    return *sketch;
  }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const std::string missing = MissingCudaArch(hw, kRowsMinSm);
    if (!missing.empty()) return {Name(), false, missing};
    const std::string non_float = NonFloatStorage(w);
    if (!non_float.empty()) return {Name(), false, non_float};
    if (w.epilogue.empty()) return {Name(), false, "needs an epilogue to compute the output"};
    const std::string non_broadcasting = NonBroadcastingInput(w);
    if (!non_broadcasting.empty()) return {Name(), false, non_broadcasting};
    return {Name(), true, "vector groups per thread, grid-stride; f32/f16/bf16, fp32 math"};
  }
};

}  // namespace

std::vector<std::string> CudaElementwiseKnobNames() { return {"block", "vw", "ept", "iters"}; }

absl::StatusOr<CudaElementwiseConfig> DecodeCudaElementwise(const ir::Workload& w,
                                                            const KnobValues& values) {
  if (w.anchor != ir::AnchorKind::kNone) {
    return absl::InvalidArgumentError(
        "the CUDA element-wise sketch needs a workload without anchor");
  }
  if (values.size() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA element-wise schedule expects 4 decisions, got ", values.size()));
  }
  GTCO_RETURN_IF_ERROR(CheckOneOf("block", values[kBlockKnob], kBlocks));
  GTCO_RETURN_IF_ERROR(CheckOneOf("vw", values[kVwKnob], kVectorWidths));
  GTCO_RETURN_IF_ERROR(CheckOneOf("ept", values[kEptKnob], kGroupsPerThread));
  GTCO_RETURN_IF_ERROR(CheckOneOf("iters", values[kItersKnob], kItersPerThread));
  const CollapsedShapes view = CollapseBroadcastDims(w);
  CudaElementwiseConfig c;
  c.block = static_cast<int>(values[kBlockKnob]);
  c.vector_width = static_cast<int>(values[kVwKnob]);
  c.groups_per_thread = static_cast<int>(values[kEptKnob]);
  c.iters = static_cast<int>(values[kItersKnob]);
  c.elements = NumElements(view.out);
  c.last = view.out.back();
  c.groups = (c.elements + c.vector_width - 1) / c.vector_width;
  return c;
}

const MappingSketch& CudaElementwiseMapping() {
  static const SimtElementwiseMapping* const mapping = new SimtElementwiseMapping();
  return *mapping;
}

}  // namespace gtco::kernels
