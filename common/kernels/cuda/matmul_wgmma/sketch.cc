// The "wgmma" mapping and its sketch "cuda_mm_wgmma/v1": f16 / bf16 matmuls on Hopper Tensor Cores
// through warpgroup-level wgmma.mma_async (sm_90a) with both operands read from 128-byte-swizzled
// shared memory by matrix descriptors (kernels: codegen/cuda/matmul_wgmma_gen.cc).
// Knobs: block tile bm x bn, k step bk (64), consumer warpgroups, shared-memory stages.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/kernels/cuda/matmul_common/cuda_matmul_common.h"
#include "common/kernels/cuda/matmul_common/cuda_matmul_tc.h"
#include "common/kernels/cuda/matmul_wgmma/generator.h"
#include "common/kernels/family.h"
#include "common/schedule/cuda_sketch.h"
#include "common/schedule/mapping.h"

namespace gtco::kernels {
namespace {

/// wgmma is an sm_90a feature: Hopper only (Blackwell has tcgen05 instead).
constexpr int kWgmmaSm = 90;

class WgmmaMatMulSketch final : public CudaSketch {
 public:
  const char* Name() const override { return "cuda_mm_wgmma/v1"; }
  CudaGenerator Generator() const override { return &GenerateWgmmaMatMul; }
  std::vector<std::string> KnobNames() const override { return {"bm", "bn", "bk", "wg", "stages"}; }
  bool AppliesTo(const ir::Workload& w) const override {
    return TensorCoreInputType(w) != ir::DType::kF32;
  }

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    return {{"bm", {128, 64, 256}},
            {"bn", {128, 256, 64, 192}},
            {"bk", {WgmmaMatMulConfig::kBk}},
            {"wg", {2, 1}},
            {"stages", {4, 3, 5, 6}}};
  }

  CudaPlan Plan(const ir::Workload& w, const KnobValues& values) const override {
    return PlanWgmmaMatMul(w, WgmmaConfigOf(w, values));
  }

  /// Rules, in order: the GPU resource rules (CudaResourceRule), "warpgroup_tile" (bm / 64 row
  /// tiles do not split evenly over the warpgroups), "exceeds_shape" (a tile or pipeline much
  /// larger than the problem), "grid" (more row tiles or batches than a launch allows).
  const char* PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                        const KnobValues& values) const override {
    const WgmmaMatMulConfig c = WgmmaConfigOf(w, values);
    if (const char* rule = CudaResourceRule(hw, PlanWgmmaMatMul(w, c))) return rule;
    if (c.MTilesPerWarpgroup() == 0) return "warpgroup_tile";
    const ir::MatMulParams& p = w.matmul;
    const int64_t k_tiles = (p.k + WgmmaMatMulConfig::kBk - 1) / WgmmaMatMulConfig::kBk;
    if (TileExceedsShape(c.bm, 64, p.m, 64) || TileExceedsShape(c.bn, 64, p.n, 64) ||
        (c.stages > 3 && c.stages - 2 > k_tiles)) {
      return "exceeds_shape";
    }
    if ((p.m + c.bm - 1) / c.bm > cuda_matmul::kMaxGridYZ || p.batch > cuda_matmul::kMaxGridYZ)
      return "grid";
    return nullptr;
  }

  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    return PruneRule(w, hw, values) == nullptr;
  }
};

class WgmmaMapping final : public CudaMappingSketch {
 public:
  const char* Name() const override { return "wgmma"; }
  const CudaSketch& cuda_sketch() const override { return sketch_; }
  /// Every matmul is explained (f32 ones with the reason the mapping does not apply).
  bool Considers(const ir::Workload& w) const override {
    return w.anchor == ir::AnchorKind::kMatMul;
  }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const std::string dtype_problem = TensorCoreDTypeProblem(w);
    if (!dtype_problem.empty()) return {Name(), false, dtype_problem};
    const std::string missing = MissingCudaArch(hw, kWgmmaSm);
    if (!missing.empty()) return {Name(), false, absl::StrCat("wgmma ", missing)};
    if (hw.SmVersion() != kWgmmaSm) {
      return {Name(), false,
              absl::StrCat("wgmma needs compute capability 9.0 exactly (sm_90a; device: ",
                           hw.sm_major, ".", hw.sm_minor, ")")};
    }
    return {Name(), true,
            absl::StrCat(ir::DTypeName(TensorCoreInputType(w)),
                         " inputs on sm_90a: warpgroup wgmma.mma_async m64nNk16 from 128B-swizzled "
                         "shared memory, f32 accumulation, cp.async pipeline")};
  }

 private:
  WgmmaMatMulSketch sketch_;
};

}  // namespace

const MappingSketch& WgmmaMatMulMapping() {
  static const WgmmaMapping* const mapping = new WgmmaMapping();
  return *mapping;
}

}  // namespace gtco::kernels
