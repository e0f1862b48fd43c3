// CUDA row sketches "cuda_softmax/v1", "cuda_layernorm/v1", "cuda_reduce_mean/v1" and their
// "warp_rows" mappings: threads_per_row lanes (a group of lanes, a warp or a whole block) share
// one row, rows_per_block rows per block, vector loads of vw elements, the row cached in
// registers or streamed, and optionally a thread-block cluster per row (sm_90+) for few long rows.
#include "common/kernels/cuda/rows/cuda_rows_sketch.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/kernels/cuda/rows/cuda_rows_util.h"
#include "common/kernels/family.h"
#include "common/schedule/cuda_sketch.h"
#include "common/schedule/lower_util.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

const std::vector<int64_t> kThreadsPerRow = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
const std::vector<int64_t> kRowsPerBlock = {1, 2, 4, 8, 16, 32, 64, 128};
const std::vector<int64_t> kRowVectorWidths = {1, 2, 4, 8};
const std::vector<int64_t> kStrategies = {0, 1};
const std::vector<int64_t> kUnrolls = {1, 2, 4, 8};
const std::vector<int64_t> kSplits = {1, 2, 4, 8};
/// Most floats one thread caches (kCached); longer slices stream.
constexpr int64_t kMaxCachedFloats = 128;
/// Thread-block clusters (distributed shared memory) need compute capability 9.0.
constexpr int kClusterMinSm = 90;
/// Rows of at least this many elements, at most two per SM, are offered clusters.
constexpr int64_t kSplitMinCols = 512;

bool HasStrategyKnob(ir::AnchorKind anchor) { return anchor != ir::AnchorKind::kReduceMean; }

absl::Status CheckRowShapes(const ir::Workload& w) {
  const int64_t rows = w.row.rows, cols = w.row.cols;
  if (rows < 1 || cols < 1) return absl::InvalidArgumentError("row workload needs rows, cols >= 1");
  if (cols > kCudaMaxGridX) {
    return absl::InvalidArgumentError(
        absl::StrCat("rows of ", cols, " elements are longer than CUDA row kernels index"));
  }
  const bool layernorm = w.anchor == ir::AnchorKind::kLayerNorm;
  const int64_t out_cols = w.anchor == ir::AnchorKind::kReduceMean ? 1 : cols;
  if (w.inputs.size() < (layernorm ? 3u : 1u) || NumElements(w.inputs[0].shape) != rows * cols ||
      w.inputs[0].shape.empty() || w.inputs[0].shape.back() != cols ||
      NumElements(w.output.shape) != rows * out_cols ||
      (!w.output.shape.empty() && w.output.shape.back() != out_cols) ||
      (layernorm &&
       (NumElements(w.inputs[1].shape) != cols || NumElements(w.inputs[2].shape) != cols))) {
    return absl::InvalidArgumentError(absl::StrCat(
        ir::AnchorKindName(w.anchor), " workload shapes disagree with X [", rows, ", ", cols, "]",
        layernorm ? ", scale and bias [cols]" : "", " -> [", rows, ", ", out_cols, "]"));
  }
  return absl::OkStatus();
}

/// Registers of the epilogue's prefetched inputs and temporaries for groups of `width`.
int EpilogueRegisters(const ir::Workload& w, int width) {
  int registers = std::min<int>(static_cast<int>(w.epilogue.size()), 8);
  const int64_t last = w.output.shape.empty() ? 1 : w.output.shape.back();
  for (int input_idx : EpilogueInputs(w)) {
    const std::vector<int64_t>& shape = w.inputs[input_idx].shape;
    const bool spans = !shape.empty() && shape.back() == last && last != 1;
    registers += spans ? width : 1;
  }
  return registers;
}

int EstimateRowRegisters(const ir::Workload& w, const CudaRowsConfig& c) {
  const int64_t vw = c.vector_width;
  const int64_t in_words = ir::DTypeSize(w.inputs[0].dtype) == 2 ? (vw + 1) / 2 : 0;
  int64_t registers = 22 + (c.CrossWarp() ? 4 : 0) + (c.blocks_per_row > 1 ? 6 : 0) +
                      EpilogueRegisters(w, c.vector_width);
  const bool layernorm = c.anchor == ir::AnchorKind::kLayerNorm;
  if (c.strategy == CudaRowStrategy::kCached) {
    // The cached slice, the output staging vector and layernorm's scale and bias vectors.
    registers += c.CachedFloats() + vw + (layernorm ? 2 * vw : 0) + in_words;
  } else {
    // One chunk of loads, plus the running statistics (first pass) or the output staging vector
    // and layernorm's scale and bias (second pass), whichever is larger.
    const int64_t statistics = layernorm ? 4 : 2;
    const int64_t store = layernorm ? 3 * vw : vw;
    registers += c.unroll * vw + std::max(statistics, store);
  }
  return static_cast<int>(std::min<int64_t>(registers, 1 << 20));
}

class CudaRowSketch final : public CudaSketch {
 public:
  CudaRowSketch(const char* name, ir::AnchorKind anchor, CudaGenerator generator)
      : name_(name), anchor_(anchor), generator_(generator) {}
  const char* Name() const override { return name_; }
  CudaGenerator Generator() const override { return generator_; }
  std::vector<std::string> KnobNames() const override { return CudaRowsKnobNames(anchor_); }
  bool AppliesTo(const ir::Workload& w) const override { return w.anchor == anchor_; }

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    std::vector<Knob> knobs;
    for (const std::string& name : KnobNames()) knobs.push_back({name, ValuesOf(name, w, hw)});
    const RowPreference pref = Preferred(w, hw);
    std::vector<int> scan_order;  // most important knob first
    // Clusters come before the strategy: a row that does not fit one block's registers streams
    // by default rather than spreading over a cluster.
    for (const char* name : {"vw", "tpr", "split", "strategy", "rpb", "unroll"}) {
      for (size_t knob_idx = 0; knob_idx < knobs.size(); ++knob_idx) {
        if (knobs[knob_idx].name == name) {
          SortByPreference(&knobs[knob_idx].values, pref.Of(name));
          scan_order.push_back(static_cast<int>(knob_idx));
        }
      }
    }
    MoveFirstAdmittedToFront(&knobs, scan_order, [&](const KnobValues& values) {
      return PruneRule(w, hw, values) == nullptr;
    });
    return knobs;
  }

  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    return PruneRule(w, hw, values) == nullptr;
  }

  const char* PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                        const KnobValues& values) const override {
    absl::StatusOr<CudaRowsConfig> decoded = DecodeCudaRows(w, values);
    if (!decoded.ok()) return "other";
    const CudaRowsConfig& c = *decoded;
    if (const char* rule = CudaResourceRule(hw, Plan(w, values))) return rule;
    if (c.blocks_per_row > 1 && (hw.SmVersion() < kClusterMinSm || c.rows_per_block != 1)) {
      return "cluster";
    }
    if (c.cols % c.vector_width != 0 || c.vector_width * ir::DTypeSize(w.inputs[0].dtype) > 16) {
      return "alignment";
    }
    const int64_t min_rows_per_block = std::max<int64_t>(1, 32 / c.threads_per_row);
    if (c.threads_per_row > PowerOfTwoCeil(c.groups_per_block) ||
        c.rows_per_block > std::max(min_rows_per_block, PowerOfTwoCeil(c.rows)) ||
        c.unroll > PowerOfTwoCeil(c.groups_per_thread) ||
        (c.blocks_per_row > 1 && c.groups_per_block < c.threads_per_row)) {
      return "exceeds_shape";
    }
    if (c.strategy == CudaRowStrategy::kCached) {
      if (c.CachedFloats() > kMaxCachedFloats) return "row_cache";
      if (c.unroll != 1) return "redundant";  // unroll only shapes streaming passes
    }
    return nullptr;
  }

  CudaPlan Plan(const ir::Workload& w, const KnobValues& values) const override {
    CudaPlan plan;
    absl::StatusOr<CudaRowsConfig> decoded = DecodeCudaRows(w, values);
    if (!decoded.ok()) {
      plan.block_x = 0;  // rejected by CudaResourceRule
      return plan;
    }
    const CudaRowsConfig& c = *decoded;
    const int64_t row_blocks = (c.rows + c.rows_per_block - 1) / c.rows_per_block;
    const int64_t max_grid = kCudaMaxGridX / c.blocks_per_row * c.blocks_per_row;
    plan.grid_x = std::min(row_blocks * c.blocks_per_row, max_grid);
    plan.block_x = c.Threads();
    plan.dynamic_shared_bytes = RowSharedFloats(c) * 4;
    plan.est_registers = EstimateRowRegisters(w, c);
    plan.tile_m = c.rows_per_block;
    plan.vector_width = c.vector_width;
    plan.stages = 1;
    return plan;
  }

 private:
  struct RowPreference {
    int64_t tpr = 32, rpb = 1, vw = 1, strategy = 0, unroll = 4, split = 1;
    int64_t Of(const std::string& name) const {
      if (name == "tpr") return tpr;
      if (name == "rpb") return rpb;
      if (name == "vw") return vw;
      if (name == "strategy") return strategy;
      if (name == "unroll") return unroll;
      return split;
    }
  };

  std::vector<int64_t> ValuesOf(const std::string& name, const ir::Workload& w,
                                const target::HardwareInfo& hw) const {
    if (name == "tpr") return kThreadsPerRow;
    if (name == "rpb") return kRowsPerBlock;
    if (name == "vw") return kRowVectorWidths;
    if (name == "strategy") return kStrategies;
    if (name == "unroll") return kUnrolls;
    const bool few_long_rows =
        w.row.cols >= kSplitMinCols && w.row.rows <= 2 * std::max(hw.sm_count, 1);
    if (hw.SmVersion() >= kClusterMinSm && few_long_rows) return kSplits;
    return {1};
  }

  /// The heuristic default: the widest aligned vector, about 8 vector groups per thread (one
  /// warp per row up to 256 groups), about 128 threads per block unless that leaves fewer than
  /// two blocks per SM, the row cached in registers when it fits.
  static RowPreference Preferred(const ir::Workload& w, const target::HardwareInfo& hw) {
    RowPreference pref;
    const int64_t elem_bytes =
        ir::DTypeSize(w.inputs.empty() ? ir::DType::kF32 : w.inputs[0].dtype);
    for (int64_t vw : kRowVectorWidths) {
      if (w.row.cols % vw == 0 && vw * elem_bytes <= 16) pref.vw = vw;
    }
    const int64_t groups = std::max<int64_t>(1, w.row.cols / pref.vw);
    pref.tpr = std::clamp<int64_t>(PowerOfTwoCeil((groups + 7) / 8), 1, 1024);
    pref.rpb = std::max<int64_t>(1, 128 / pref.tpr);
    const int64_t min_rpb = std::max<int64_t>(1, 32 / pref.tpr);
    while (pref.rpb > min_rpb && (w.row.rows + pref.rpb - 1) / pref.rpb < 2 * hw.sm_count) {
      pref.rpb /= 2;
    }
    return pref;
  }

  const char* name_;
  ir::AnchorKind anchor_;
  CudaGenerator generator_;
};

/// The "warp_rows" mapping of one row sketch.
class WarpRowsMapping final : public CudaMappingSketch {
 public:
  explicit WarpRowsMapping(const CudaRowSketch& sketch) : sketch_(sketch) {}
  const char* Name() const override { return "warp_rows"; }
  const CudaSketch& cuda_sketch() const override { return sketch_; }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const std::string missing = MissingCudaArch(hw, kRowsMinSm);
    if (!missing.empty()) return {Name(), false, missing};
    const std::string non_float = NonFloatStorage(w);
    if (!non_float.empty()) return {Name(), false, non_float};
    const absl::Status shapes = CheckRowShapes(w);
    if (!shapes.ok()) return {Name(), false, std::string(shapes.message())};
    const std::string non_broadcasting = NonBroadcastingInput(w);
    if (!non_broadcasting.empty()) return {Name(), false, non_broadcasting};
    return {Name(), true,
            absl::StrCat("lanes, a warp or a block per row",
                         hw.SmVersion() >= kClusterMinSm ? " (a cluster for few long rows)" : "",
                         "; f32/f16/bf16 operands, fp32 math")};
  }

 private:
  const CudaRowSketch& sketch_;
};

}  // namespace

std::vector<std::string> CudaRowsKnobNames(ir::AnchorKind anchor) {
  if (HasStrategyKnob(anchor)) return {"tpr", "rpb", "vw", "strategy", "unroll", "split"};
  return {"tpr", "rpb", "vw", "unroll", "split"};
}

absl::StatusOr<CudaRowsConfig> DecodeCudaRows(const ir::Workload& w, const KnobValues& values) {
  if (w.anchor != ir::AnchorKind::kSoftmax && w.anchor != ir::AnchorKind::kLayerNorm &&
      w.anchor != ir::AnchorKind::kReduceMean) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA row sketches do not apply to anchor ", ir::AnchorKindName(w.anchor)));
  }
  GTCO_RETURN_IF_ERROR(CheckRowShapes(w));
  const std::vector<std::string> names = CudaRowsKnobNames(w.anchor);
  if (values.size() != names.size()) {
    return absl::InvalidArgumentError(absl::StrCat("CUDA row schedule expects ", names.size(),
                                                   " decisions, got ", values.size()));
  }
  CudaRowsConfig c;
  c.anchor = w.anchor;
  c.rows = w.row.rows;
  c.cols = w.row.cols;
  c.strategy = HasStrategyKnob(w.anchor) ? CudaRowStrategy::kCached : CudaRowStrategy::kStreaming;
  for (size_t knob_idx = 0; knob_idx < names.size(); ++knob_idx) {
    const std::string& name = names[knob_idx];
    const int64_t value = values[knob_idx];
    if (name == "tpr") {
      GTCO_RETURN_IF_ERROR(CheckOneOf("tpr", value, kThreadsPerRow));
      c.threads_per_row = static_cast<int>(value);
    } else if (name == "rpb") {
      GTCO_RETURN_IF_ERROR(CheckOneOf("rpb", value, kRowsPerBlock));
      c.rows_per_block = static_cast<int>(value);
    } else if (name == "vw") {
      GTCO_RETURN_IF_ERROR(CheckOneOf("vw", value, kRowVectorWidths));
      c.vector_width = static_cast<int>(value);
    } else if (name == "strategy") {
      GTCO_RETURN_IF_ERROR(CheckOneOf("strategy", value, kStrategies));
      c.strategy = static_cast<CudaRowStrategy>(value);
    } else if (name == "unroll") {
      GTCO_RETURN_IF_ERROR(CheckOneOf("unroll", value, kUnrolls));
      c.unroll = static_cast<int>(value);
    } else {
      GTCO_RETURN_IF_ERROR(CheckOneOf("split", value, kSplits));
      c.blocks_per_row = static_cast<int>(value);
    }
  }
  c.vector_groups = (c.cols + c.vector_width - 1) / c.vector_width;
  c.groups_per_block = (c.vector_groups + c.blocks_per_row - 1) / c.blocks_per_row;
  c.groups_per_thread = (c.groups_per_block + c.threads_per_row - 1) / c.threads_per_row;
  return c;
}

CudaRowReductions RowReductions(const CudaRowsConfig& config) {
  switch (config.anchor) {
    case ir::AnchorKind::kSoftmax:
      return {2, 1};
    case ir::AnchorKind::kLayerNorm:
      return config.strategy == CudaRowStrategy::kCached ? CudaRowReductions{2, 1}
                                                         : CudaRowReductions{1, 3};
    default:
      return {1, 1};
  }
}

int64_t RowSharedFloats(const CudaRowsConfig& config) {
  const int64_t per_float =
      (config.CrossWarp() ? config.Threads() / 32 : 0) + (config.blocks_per_row > 1 ? 1 : 0);
  const CudaRowReductions reductions = RowReductions(config);
  return 2 * reductions.count * reductions.floats * per_float;
}

const MappingSketch& CudaSoftmaxMapping() {
  static const CudaRowSketch* const sketch =
      new CudaRowSketch("cuda_softmax/v1", ir::AnchorKind::kSoftmax, &GenerateCudaSoftmax);
  static const WarpRowsMapping* const mapping = new WarpRowsMapping(*sketch);
  return *mapping;
}

const MappingSketch& CudaLayerNormMapping() {
  static const CudaRowSketch* const sketch =
      new CudaRowSketch("cuda_layernorm/v1", ir::AnchorKind::kLayerNorm, &GenerateCudaLayerNorm);
  static const WarpRowsMapping* const mapping = new WarpRowsMapping(*sketch);
  return *mapping;
}

const MappingSketch& CudaReduceMeanMapping() {
  static const CudaRowSketch* const sketch = new CudaRowSketch(
      "cuda_reduce_mean/v1", ir::AnchorKind::kReduceMean, &GenerateCudaReduceMean);
  static const WarpRowsMapping* const mapping = new WarpRowsMapping(*sketch);
  return *mapping;
}

}  // namespace gtco::kernels
