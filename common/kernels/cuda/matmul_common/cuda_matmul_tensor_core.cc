// Knobs, plans and pruning of the mma.sync tensor-core matmul sketches.
#include "common/kernels/cuda/matmul_common/cuda_matmul_tensor_core.h"

#include <algorithm>
#include <array>

#include "common/kernels/family.h"

namespace gtco::kernels::cuda_matmul {
namespace {

constexpr int64_t kSmallestBlock = 32;
/// Registers beyond accumulators and fragments: shared-memory addresses of the fragment reads
/// and of the copies, global pointers, loop counters.
constexpr int64_t kBaseRegisters = 32;

}  // namespace

std::vector<std::string> TensorCoreMatMulSketch::KnobNames() const {
  std::vector<std::string> names = {"bm", "bn", "bk", "wm", "wn", "stages"};
  if (!spec_.split_values.empty()) names.push_back("split");
  return names;
}

std::vector<Knob> TensorCoreMatMulSketch::Knobs(const ir::Workload& w,
                                                const target::HardwareInfo& hw) const {
  const ir::MatMulParams& p = w.matmul;
  std::vector<Knob> knobs = {{"bm", {128, 64, 256, 32}}, {"bn", {128, 64, 256, 32}},
                             {"bk", spec_.bk_values},    {"wm", {64, 32, 16}},
                             {"wn", {64, 32, 16}},       {"stages", spec_.stage_values}};
  const bool split = !spec_.split_values.empty();
  if (split) knobs.push_back({"split", spec_.split_values});
  std::vector<KnobValues> preferred;
  for (const auto& [bm, bn, wm, wn] : std::vector<std::array<int64_t, 4>>{{128, 128, 64, 64},
                                                                          {128, 64, 64, 32},
                                                                          {64, 128, 32, 64},
                                                                          {64, 64, 32, 32},
                                                                          {64, 32, 32, 16},
                                                                          {32, 64, 16, 32},
                                                                          {32, 32, 16, 16}}) {
    // 64x64 warp tiles leave a K-split kernel's cluster bookkeeping a few registers short of
    // 255 (ptxas spills); the split is for small problems, which smaller tiles suit anyway.
    if (split && wm * wn > 64 * 32) continue;
    for (int64_t stages : {spec_.stage_values[0], int64_t{2}}) {
      for (int64_t bk : spec_.bk_values) {
        if (!split) {
          preferred.push_back({bm, bn, bk, wm, wn, stages});
          continue;
        }
        for (int64_t parts : spec_.split_values) {
          preferred.push_back({bm, bn, bk, wm, wn, stages, parts});
        }
      }
    }
  }
  PutDefaultFirst(
      preferred, [&](const KnobValues& values) { return Admits(w, hw, values); },
      [&](const KnobValues& values) {
        return CeilDiv(p.m, values[kTcBm]) * CeilDiv(p.n, values[kTcBn]) * p.batch *
               (split ? values[kTcSplit] : 1);
      },
      hw.sm_count, &knobs);
  return knobs;
}

TensorCoreTiling TensorCoreMatMulSketch::Tiling(const ir::Workload& w,
                                                const KnobValues& values) const {
  TensorCoreTiling tiling = MakeTensorCoreTiling(
      w, values[kTcBm], values[kTcBn], values[kTcBk], values[kTcWm], values[kTcWn],
      static_cast<int>(values[kTcStages]), spec_.pad_k_contiguous, spec_.pad_k_strided);
  if (!spec_.split_values.empty() && values.size() > kTcSplit) tiling.split = values[kTcSplit];
  return tiling;
}

CudaPlan TensorCoreMatMulSketch::Plan(const ir::Workload& w, const KnobValues& values) const {
  const TensorCoreTiling tiling = Tiling(w, values);
  CudaPlan plan = TensorCorePlan(w, tiling);
  const int64_t mma_tiles_m = std::max<int64_t>(1, tiling.wm / spec_.mma_m);
  const int64_t mma_tiles_n = std::max<int64_t>(1, tiling.wn / spec_.mma_n);
  // Accumulators (4 floats per m16n8 tile), then the A and B fragments of one k step, held
  // twice while the next step's fragments load (measured with NVRTC 13: within about 20% for
  // warp tiles of 32x32 and larger).
  const int64_t accumulators = mma_tiles_m * mma_tiles_n * 4;
  const int64_t a_fragment = mma_tiles_m * spec_.mma_m * spec_.mma_k / 32 * tiling.elem_bytes / 4;
  const int64_t b_fragment = mma_tiles_n * spec_.mma_n * spec_.mma_k / 32 * tiling.elem_bytes / 4;
  plan.est_registers = static_cast<int>(
      std::min<int64_t>(accumulators + 2 * (a_fragment + b_fragment) + kBaseRegisters, 1024));
  return plan;
}

const char* TensorCoreMatMulSketch::PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                                              const KnobValues& values) const {
  const TensorCoreTiling tiling = Tiling(w, values);
  const bool whole_warps = tiling.wm > 0 && tiling.wn > 0 && tiling.bm % tiling.wm == 0 &&
                           tiling.bn % tiling.wn == 0 && tiling.wm % spec_.mma_m == 0 &&
                           tiling.wn % spec_.warp_n_multiple == 0;
  CudaPlan plan = Plan(w, values);
  if (!whole_warps) plan.block_x = 0;  // not a valid thread block: "threads_per_block"
  if (const char* rule = CudaResourceRule(hw, plan)) return rule;
  return TensorCoreShapeRule(w, tiling, kSmallestBlock,
                             *std::min_element(spec_.bk_values.begin(), spec_.bk_values.end()));
}

}  // namespace gtco::kernels::cuda_matmul
