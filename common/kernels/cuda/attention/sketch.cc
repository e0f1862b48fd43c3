// The fused-attention CUDA sketch "cuda_attention/v1" (mapping "flash"): one kernel, one thread
// block per (batch entry, block of bq query rows). The block keeps its Q tile in shared memory,
// streams K/V tiles of bk keys through shared memory, keeps a running max and sum per row (online
// softmax) and accumulates the output in registers, written once. SIMT fp32 math; f16/bf16
// inputs are converted to fp32 when staged.
//
// Thread layout (carried by the plan, replayed by codegen/cuda/attention_gen.cc): the block is
// block_x = cg lanes across key columns times block_y = rg row groups; thread (x, y) owns query
// rows {i * rg + y : i < bq / rg} of the tile, score columns {j * cg + x : j < bk / cg} and output
// column chunks {(u * cg + x) * ow .. + ow}. Shared memory (fp32): Q [bq][sq], K [bk][sk],
// V [bk][dv_pad], P [bq][bk + 4]; sq = sk = the head dim padded to a multiple of 4, plus 4 when
// that is a multiple of 8 (conflict-free float4 reads across rows).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/kernels/cuda/attention/generator.h"
#include "common/kernels/family.h"
#include "common/schedule/cuda_sketch.h"

namespace gtco::kernels {
namespace {

constexpr int kWarpSize = 32;
constexpr int kMaxHeadDim = 256;
constexpr int64_t kMaxGridX = 2147483647;
constexpr int64_t kQueryTiles[] = {64, 32, 128, 16};
constexpr int64_t kKeyTiles[] = {64, 32, 128, 16};
constexpr int64_t kWarps[] = {4, 8, 2, 1};
constexpr int64_t kVectorWidths16[] = {8, 4, 2, 1};  ///< 16-bit inputs
constexpr int64_t kVectorWidths32[] = {4, 2, 1};

/// The thread layout of (bq, bk, warps) for an output of `value_dim` columns.
struct Layout {
  int cg = 1, rg = 1;      ///< lanes across key columns, row groups
  int64_t tm = 1, tn = 1;  ///< query rows and score columns per thread
  int64_t ow = 1;          ///< output columns per chunk (vector width of P.V)
  int64_t dv_pad = 1;      ///< value_dim rounded up to ow * cg
  int est_registers = 0;
};

/// Output chunk width for `cg` lanes: the widest of 4, 2, 1 that pads value_dim least. Mirrored
/// by attention_gen.cc (OutputChunkWidth); both must agree.
int64_t OutputChunkWidth(int64_t value_dim, int cg) {
  int64_t best = 4;
  for (int64_t width : {2, 1}) {
    if (RoundUp(value_dim, width * cg) < RoundUp(value_dim, best * cg)) best = width;
  }
  return best;
}

/// Registers per thread: the output accumulators and scores, the float4 operands the scores loop
/// keeps in flight (two iterations unrolled), a few per output chunk, and indices, pointers and
/// softmax state. Fitted to ptxas (CUDA 13, sm_80/sm_90) over ~90 kernels: the median ratio of
/// the real count to this is 1.0, the range 0.55 (tiny head dims) to 1.26.
int EstimateRegisters(int64_t tm, int64_t tn, int64_t ow, int64_t chunks, int64_t head_dim) {
  const int64_t unrolled = std::min<int64_t>(2, RoundUp(head_dim, 4) / 4);
  return static_cast<int>(tm * chunks * ow + tm * tn + 2 * (tm + tn) * unrolled + 3 * chunks + 48);
}

/// The layout with the fewest estimated registers (ties: squarer per-thread tiles, then more
/// lanes across columns); nullopt when bq, bk and the thread count admit none.
std::optional<Layout> ChooseLayout(int64_t bq, int64_t bk, int64_t warps, int64_t head_dim,
                                   int64_t value_dim) {
  const int64_t threads = warps * kWarpSize;
  std::optional<Layout> best;
  double best_skew = 0;
  for (int cg = 1; cg <= kWarpSize; cg *= 2) {
    if (threads % cg != 0 || bk % cg != 0) continue;
    const int64_t rg = threads / cg;
    if (rg > bq || bq % rg != 0) continue;
    Layout layout;
    layout.cg = cg;
    layout.rg = static_cast<int>(rg);
    layout.tm = bq / rg;
    layout.tn = bk / cg;
    layout.ow = OutputChunkWidth(value_dim, cg);
    layout.dv_pad = RoundUp(value_dim, layout.ow * cg);
    layout.est_registers = EstimateRegisters(layout.tm, layout.tn, layout.ow,
                                             layout.dv_pad / (layout.ow * cg), head_dim);
    const double skew = std::fabs(std::log2(static_cast<double>(layout.tm) / layout.tn));
    if (!best || layout.est_registers < best->est_registers ||
        (layout.est_registers == best->est_registers && skew <= best_skew)) {
      best = layout;
      best_skew = skew;
    }
  }
  return best;
}

/// Head dim padded to a multiple of 4, and the Q/K shared-memory row stride (floats).
int64_t PaddedHeadDim(int64_t head_dim) { return RoundUp(head_dim, 4); }
int64_t QkStride(int64_t head_dim) {
  const int64_t padded = PaddedHeadDim(head_dim);
  return padded % 8 == 0 ? padded + 4 : padded;
}

/// Largest power of two <= `width` dividing `length`.
int64_t UsableWidth(int64_t width, int64_t length) {
  while (width > 1 && length % width != 0) width /= 2;
  return width;
}

bool IsSixteenBit(const ir::Workload& w) {
  return w.inputs[0].dtype == ir::DType::kF16 || w.inputs[0].dtype == ir::DType::kBF16;
}

int64_t QueryBlocks(const ir::Workload& w, int64_t bq) {
  return w.attention.batch * ((w.attention.seq_q + bq - 1) / bq);
}

class CudaAttentionSketch final : public CudaSketch {
 public:
  const char* Name() const override { return "cuda_attention/v1"; }
  CudaGenerator Generator() const override { return &GenerateAttentionKernel; }
  std::vector<std::string> KnobNames() const override { return {"bq", "bk", "warps", "vw"}; }
  bool AppliesTo(const ir::Workload& w) const override {
    // The CUDA kernel adds no mask: masked attention stays unfused on CUDA (the planner only
    // fuses masked patterns for the CPU).
    return w.anchor == ir::AnchorKind::kAttention && w.inputs.size() >= 3 &&
           w.attention.mask_groups == 0;
  }

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    std::vector<Knob> knobs = {
        {"bq", std::vector<int64_t>(std::begin(kQueryTiles), std::end(kQueryTiles))},
        {"bk", std::vector<int64_t>(std::begin(kKeyTiles), std::end(kKeyTiles))},
        {"warps", std::vector<int64_t>(std::begin(kWarps), std::end(kWarps))},
        IsSixteenBit(w) ? Knob{"vw", std::vector<int64_t>(std::begin(kVectorWidths16),
                                                          std::end(kVectorWidths16))}
                        : Knob{"vw", std::vector<int64_t>(std::begin(kVectorWidths32),
                                                          std::end(kVectorWidths32))}};
    // Move the first admitted combination (in this preference order) to the front, so that the
    // first values form an admitted trace.
    std::vector<size_t> digits(knobs.size(), 0);
    while (true) {
      KnobValues values;
      for (size_t knob_idx = 0; knob_idx < knobs.size(); ++knob_idx) {
        values.push_back(knobs[knob_idx].values[digits[knob_idx]]);
      }
      if (PruneRule(w, hw, values) == nullptr) {
        for (size_t knob_idx = 0; knob_idx < knobs.size(); ++knob_idx) {
          std::vector<int64_t>& candidates = knobs[knob_idx].values;
          std::rotate(candidates.begin(), candidates.begin() + digits[knob_idx],
                      candidates.begin() + digits[knob_idx] + 1);
        }
        return knobs;
      }
      size_t knob_idx = knobs.size();
      while (knob_idx > 0 && ++digits[knob_idx - 1] == knobs[knob_idx - 1].values.size()) {
        digits[--knob_idx] = 0;
      }
      if (knob_idx == 0) return knobs;  // nothing admitted: the space reports it
    }
  }

  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    return PruneRule(w, hw, values) == nullptr;
  }

  /// Rules, in order: the GPU resource rules (CudaResourceRule); "layout" (no thread layout for
  /// bq, bk and warps); "alignment" (vw is wider than any of Q, K, V rows can be read with);
  /// "exceeds_shape" (a tile of half the size covers every query row or key); and
  /// "too_small_to_parallelize" (fewer blocks than half the SMs while a smaller bq exists).
  const char* PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                        const KnobValues& values) const override {
    if (values.size() != 4) return "layout";
    const int64_t bq = values[0], bk = values[1], warps = values[2], vw = values[3];
    if (const char* rule = CudaResourceRule(hw, Plan(w, values))) return rule;
    const ir::AttentionParams& p = w.attention;
    if (!ChooseLayout(bq, bk, warps, p.head_dim, p.value_dim)) return "layout";
    const int64_t key_row = p.k_transposed ? p.seq_k : p.head_dim;
    if (vw > 1 && std::max({UsableWidth(vw, p.head_dim), UsableWidth(vw, key_row),
                            UsableWidth(vw, p.value_dim)}) < vw) {
      return "alignment";
    }
    const int64_t smallest_bq = *std::min_element(std::begin(kQueryTiles), std::end(kQueryTiles));
    const int64_t smallest_bk = *std::min_element(std::begin(kKeyTiles), std::end(kKeyTiles));
    if ((bq > smallest_bq && bq / 2 >= p.seq_q) || (bk > smallest_bk && bk / 2 >= p.seq_k)) {
      return "exceeds_shape";
    }
    if (bq > smallest_bq && hw.sm_count > 0 && 2 * QueryBlocks(w, bq) < hw.sm_count) {
      return "too_small_to_parallelize";
    }
    return nullptr;
  }

  CudaPlan Plan(const ir::Workload& w, const KnobValues& values) const override {
    CudaPlan plan;
    if (values.size() != 4 || values[0] <= 0 || values[1] <= 0 || values[2] <= 0) return plan;
    const int64_t bq = values[0], bk = values[1], warps = values[2];
    const ir::AttentionParams& p = w.attention;
    const std::optional<Layout> layout = ChooseLayout(bq, bk, warps, p.head_dim, p.value_dim);
    plan.grid_x = QueryBlocks(w, bq);
    plan.block_x = layout ? layout->cg : static_cast<int>(warps * kWarpSize);
    plan.block_y = layout ? layout->rg : 1;
    const int64_t dv_pad = layout ? layout->dv_pad : RoundUp(p.value_dim, 4);
    const int64_t qk_stride = QkStride(p.head_dim);
    plan.dynamic_shared_bytes = 4 * (bq * qk_stride + bk * qk_stride + bk * dv_pad + bq * (bk + 4));
    plan.est_registers = layout ? layout->est_registers : 255;
    plan.tile_m = bq;
    plan.tile_n = bk;
    plan.tile_k = PaddedHeadDim(p.head_dim);
    plan.stages = 1;
    plan.vector_width = static_cast<int>(values[3]);
    plan.tensor_core = false;
    return plan;
  }
};

const CudaAttentionSketch& AttentionSketch() {
  static const CudaAttentionSketch* const sketch = new CudaAttentionSketch();
  return *sketch;
}

/// "flash": the attention sketch on any CUDA GPU of compute capability 7.0 or newer.
class FlashMapping final : public CudaMappingSketch {
 public:
  const char* Name() const override { return "flash"; }
  const CudaSketch& cuda_sketch() const override { return AttentionSketch(); }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const std::string missing = MissingCudaArch(hw, 70);
    if (!missing.empty()) return {Name(), false, missing};
    const ir::AttentionParams& p = w.attention;
    if (p.mask_groups > 0) return {Name(), false, "the CUDA kernel adds no attention mask"};
    if (p.head_dim > kMaxHeadDim || p.value_dim > kMaxHeadDim) {
      return {Name(), false,
              absl::StrCat("head_dim ", p.head_dim, " / value_dim ", p.value_dim, " exceed ",
                           kMaxHeadDim, " (the Q, K and V tiles live in shared memory)")};
    }
    const int64_t smallest_bq = *std::min_element(std::begin(kQueryTiles), std::end(kQueryTiles));
    if (QueryBlocks(w, smallest_bq) > kMaxGridX) {
      return {Name(), false, "more query blocks than one grid dimension holds"};
    }
    return {Name(), true,
            absl::StrCat("one kernel per (batch, query block): Q in shared memory, K/V tiles "
                         "streamed, online softmax in fp32 on ",
                         ir::DTypeName(w.inputs[0].dtype), " inputs")};
  }
};

}  // namespace

const MappingSketch& FlashAttentionMapping() {
  static const FlashMapping* const mapping = new FlashMapping();
  return *mapping;
}

}  // namespace gtco::kernels
