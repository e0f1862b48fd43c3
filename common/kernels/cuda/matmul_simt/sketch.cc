// The SIMT CUDA matmul sketch "cuda_mm_simt/v1" and its mapping "simt": fp32 FMA on CUDA cores
// with shared-memory block tiles and per-thread register tiles, for f32, f16 and bf16 inputs
// (16-bit inputs are converted to f32 as they are loaded). Kernels: matmul_simt_gen.cc.
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/kernels/cuda/matmul_common/cuda_matmul_common.h"
#include "common/kernels/cuda/matmul_simt/generator.h"
#include "common/kernels/family.h"
#include "common/schedule/cuda_sketch.h"

namespace gtco::kernels {
namespace {

constexpr int64_t kSmallestBlock = 32;
constexpr int64_t kSmallestBk = 8;
/// Registers beyond the tiles: indices, pointers, loop counters and the block's origin.
constexpr int kBaseRegisters = 30;
/// Extra registers of the cp.async pipeline (per-chunk source and destination addresses).
constexpr int kAsyncRegisters = 10;

std::vector<int64_t> VectorWidthValues(ir::DType dtype, int64_t contiguous_extent) {
  std::vector<int64_t> values;
  for (int64_t width = cuda_matmul::Vector16Elements(dtype); width >= 1; width /= 2) {
    values.push_back(width);
  }
  // The widest width the shapes allow comes first (the others stay: "alignment" prunes them).
  for (int64_t width : values) {
    if (contiguous_extent % width == 0) {
      cuda_matmul::MoveToFront(&values, width);
      break;
    }
  }
  return values;
}

class SimtMatMulSketch final : public CudaSketch {
 public:
  const char* Name() const override { return "cuda_mm_simt/v1"; }
  CudaGenerator Generator() const override { return &GenerateSimtMatMul; }
  std::vector<std::string> KnobNames() const override {
    return {"bm", "bn", "bk", "tm", "tn", "stages", "vw_a", "vw_b"};
  }
  bool AppliesTo(const ir::Workload& w) const override {
    return w.anchor == ir::AnchorKind::kMatMul && w.inputs.size() >= 2;
  }

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const ir::MatMulParams& p = w.matmul;
    const bool async = hw.SmVersion() >= 80 && w.inputs[0].dtype == ir::DType::kF32 &&
                       w.inputs[1].dtype == ir::DType::kF32;
    std::vector<Knob> knobs = {
        {"bm", {128, 64, 32}},
        {"bn", {128, 64, 32}},
        {"bk", {8, 16, 32}},
        {"tm", {8, 4}},
        {"tn", {8, 4}},
        {"stages", async ? std::vector<int64_t>{1, 2, 3, 4} : std::vector<int64_t>{1}},
        {"vw_a", VectorWidthValues(w.inputs[0].dtype, cuda_matmul::AContiguousExtent(p))},
        {"vw_b", VectorWidthValues(w.inputs[1].dtype, cuda_matmul::BContiguousExtent(p))}};
    const int64_t vw_a = knobs[cuda_matmul::kSimtVwA].values[0];
    const int64_t vw_b = knobs[cuda_matmul::kSimtVwB].values[0];
    std::vector<KnobValues> preferred;
    for (const auto& [bm, bn, tm, tn] : std::vector<std::array<int64_t, 4>>{{128, 128, 8, 8},
                                                                            {128, 64, 8, 8},
                                                                            {64, 128, 8, 8},
                                                                            {64, 64, 8, 4},
                                                                            {64, 64, 4, 4},
                                                                            {64, 32, 4, 4},
                                                                            {32, 64, 4, 4},
                                                                            {32, 32, 4, 4}}) {
      preferred.push_back({bm, bn, 8, tm, tn, 1, vw_a, vw_b});
    }
    cuda_matmul::PutDefaultFirst(
        preferred, [&](const KnobValues& values) { return Admits(w, hw, values); },
        [&](const KnobValues& values) {
          return CeilDiv(p.m, values[0]) * CeilDiv(p.n, values[1]) * p.batch;
        },
        hw.sm_count, &knobs);
    return knobs;
  }

  CudaPlan Plan(const ir::Workload& w, const KnobValues& values) const override {
    const ir::MatMulParams& p = w.matmul;
    const cuda_matmul::SimtTiling tiling = cuda_matmul::MakeSimtTiling(values);
    CudaPlan plan;
    plan.grid_x = tiling.bn > 0 ? CeilDiv(p.n, tiling.bn) : 1;
    plan.grid_y = tiling.bm > 0 ? CeilDiv(p.m, tiling.bm) : 1;
    plan.grid_z = p.batch;
    plan.block_x = static_cast<int>(tiling.Threads());
    plan.dynamic_shared_bytes = tiling.SharedBytes();
    plan.tile_m = tiling.bm;
    plan.tile_n = tiling.bn;
    plan.tile_k = tiling.bk;
    plan.stages = tiling.stages;
    plan.vector_width = static_cast<int>(std::min(tiling.vw_a, tiling.vw_b));
    plan.tensor_core = false;
    // Accumulators, one column of A and one row of B per k step, and per copied chunk an
    // address or predicate (cp.async) or, with register prefetch, the chunk's elements in flight
    // plus half a register of addressing.
    int64_t registers = tiling.tm * tiling.tn + tiling.tm + tiling.tn + kBaseRegisters;
    const int64_t threads = std::max<int64_t>(1, tiling.Threads());
    for (const auto& [extent, vw] :
         {std::pair{tiling.bm, tiling.vw_a}, std::pair{tiling.bn, tiling.vw_b}}) {
      const int64_t width = std::max<int64_t>(1, vw);
      const int64_t chunks = CeilDiv(tiling.bk * extent / width, threads);
      registers += tiling.stages == 1 ? chunks * width + chunks / 2 : chunks;
    }
    if (tiling.stages > 1) registers += kAsyncRegisters;
    plan.est_registers = static_cast<int>(std::min<int64_t>(registers, 1024));
    return plan;
  }

  const char* PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                        const KnobValues& values) const override {
    if (const char* rule = CudaResourceRule(hw, Plan(w, values))) return rule;
    const ir::MatMulParams& p = w.matmul;
    const cuda_matmul::SimtTiling tiling = cuda_matmul::MakeSimtTiling(values);
    if (cuda_matmul::TileExceeds(tiling.bm, p.m, kSmallestBlock) ||
        cuda_matmul::TileExceeds(tiling.bn, p.n, kSmallestBlock) ||
        cuda_matmul::TileExceeds(tiling.bk, p.k, kSmallestBk)) {
      return "exceeds_shape";
    }
    if (CeilDiv(p.m, tiling.bm) > cuda_matmul::kMaxGridYZ || p.batch > cuda_matmul::kMaxGridYZ) {
      return "grid_limit";
    }
    if (cuda_matmul::AContiguousExtent(p) % tiling.vw_a != 0 ||
        cuda_matmul::BContiguousExtent(p) % tiling.vw_b != 0) {
      return "alignment";
    }
    // cp.async copies bytes unchanged and contiguously: it needs f32 inputs, sm_80, and copies
    // an operand stored k-contiguous (transposed into the k-major tile) element by element.
    if (tiling.stages > 1 && (hw.SmVersion() < 80 || w.inputs[0].dtype != ir::DType::kF32 ||
                              w.inputs[1].dtype != ir::DType::kF32 ||
                              (cuda_matmul::AKContiguous(p) && tiling.vw_a > 1) ||
                              (cuda_matmul::BKContiguous(p) && tiling.vw_b > 1))) {
      return "async_copy";
    }
    return nullptr;
  }

  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    return PruneRule(w, hw, values) == nullptr;
  }
};

class SimtMatMulMapping final : public CudaMappingSketch {
 public:
  const char* Name() const override { return "simt"; }
  const CudaSketch& cuda_sketch() const override { return sketch_; }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    std::string reason = MissingCudaArch(hw, 70);
    if (!reason.empty()) return {Name(), false, reason};
    for (int input_idx = 0; input_idx < 2 && input_idx < static_cast<int>(w.inputs.size());
         ++input_idx) {
      if (!cuda_matmul::IsFloatDType(w.inputs[input_idx].dtype)) {
        return {Name(), false,
                absl::StrCat("needs floating-point (f32, f16 or bf16) operands (in", input_idx,
                             " is ", ir::DTypeName(w.inputs[input_idx].dtype), ")")};
      }
    }
    if (!cuda_matmul::IsFloatDType(w.output.dtype)) {
      return {Name(), false,
              absl::StrCat("needs a floating-point output (out is ", ir::DTypeName(w.output.dtype),
                           ")")};
    }
    const bool converted = w.inputs[0].dtype != ir::DType::kF32;
    return {Name(), true,
            absl::StrCat("fp32 FMA register tiles on CUDA cores (sm_", hw.SmVersion(), ")",
                         converted ? absl::StrCat(", ", ir::DTypeName(w.inputs[0].dtype),
                                                  " inputs converted to f32 on load")
                                   : std::string(", f32 operands"))};
  }

 private:
  SimtMatMulSketch sketch_;
};

}  // namespace

const MappingSketch& CudaSimtMatMulMapping() {
  static const SimtMatMulMapping* const mapping = new SimtMatMulMapping();
  return *mapping;
}

}  // namespace gtco::kernels
