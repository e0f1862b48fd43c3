// The "wmma" mapping and its sketch "cuda_mm_wmma/v1": f16 / bf16 matmuls on Tensor Cores through
// warp-level wmma.m16n16k16 with f32 accumulation (kernels: codegen/cuda/matmul_wmma_gen.cc).
// Knobs: block tile bm x bn, k step bk, warp tile wm x wn, shared-memory stages.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/kernels/cuda/matmul_common/cuda_matmul_common.h"
#include "common/kernels/cuda/matmul_common/cuda_matmul_tc.h"
#include "common/kernels/cuda/matmul_wmma/generator.h"
#include "common/kernels/family.h"
#include "common/schedule/cuda_sketch.h"
#include "common/schedule/mapping.h"

namespace gtco::kernels {
namespace {

/// f16 wmma exists since Volta, bf16 wmma since Ampere; cp.async pipelining needs Ampere.
constexpr int kMinSmF16 = 70;
constexpr int kMinSmBf16 = 80;
constexpr int kMinSmAsyncCopy = 80;

class WmmaMatMulSketch final : public CudaSketch {
 public:
  const char* Name() const override { return "cuda_mm_wmma/v1"; }
  CudaGenerator Generator() const override { return &GenerateWmmaMatMul; }
  std::vector<std::string> KnobNames() const override {
    return {"bm", "bn", "bk", "wm", "wn", "stages"};
  }
  bool AppliesTo(const ir::Workload& w) const override {
    return TensorCoreInputType(w) != ir::DType::kF32;
  }

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    // Without cp.async (before sm_80) copies are synchronous: a second stage only double-buffers.
    std::vector<int64_t> stages = {3, 2, 4};
    if (hw.SmVersion() < kMinSmAsyncCopy) stages = {2};
    return {{"bm", {128, 64, 256, 32}}, {"bn", {128, 64, 256, 32}}, {"bk", {32, 64, 16}},
            {"wm", {64, 32, 16}},       {"wn", {32, 64, 16}},       {"stages", stages}};
  }

  CudaPlan Plan(const ir::Workload& w, const KnobValues& values) const override {
    return PlanWmmaMatMul(w, WmmaConfigOf(w, values));
  }

  /// Rules, in order: the GPU resource rules (CudaResourceRule), "warp_tile" (the warp tile does
  /// not fit the block tile), "exceeds_shape" (a tile or pipeline much larger than the problem),
  /// "grid" (more row tiles or batches than a launch allows).
  const char* PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                        const KnobValues& values) const override {
    const WmmaMatMulConfig c = WmmaConfigOf(w, values);
    if (const char* rule = CudaResourceRule(hw, PlanWmmaMatMul(w, c))) return rule;
    if (c.wm > c.bm || c.wn > c.bn) return "warp_tile";
    const ir::MatMulParams& p = w.matmul;
    const int64_t k_tiles = (p.k + c.bk - 1) / c.bk;
    if (TileExceedsShape(c.bm, 32, p.m, 16) || TileExceedsShape(c.bn, 32, p.n, 16) ||
        TileExceedsShape(c.bk, 16, p.k, 16) || TileExceedsShape(c.wm, 16, c.bm, 16) ||
        TileExceedsShape(c.wn, 16, c.bn, 16) || (c.stages > 2 && c.stages - 1 > k_tiles)) {
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

class WmmaMapping final : public CudaMappingSketch {
 public:
  const char* Name() const override { return "wmma"; }
  const CudaSketch& cuda_sketch() const override { return sketch_; }
  /// Every matmul is explained (f32 ones with the reason the mapping does not apply).
  bool Considers(const ir::Workload& w) const override {
    return w.anchor == ir::AnchorKind::kMatMul;
  }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const std::string dtype_problem = TensorCoreDTypeProblem(w);
    if (!dtype_problem.empty()) return {Name(), false, dtype_problem};
    const ir::DType input = TensorCoreInputType(w);
    const bool bf16 = input == ir::DType::kBF16;
    const std::string missing = MissingCudaArch(hw, bf16 ? kMinSmBf16 : kMinSmF16);
    if (!missing.empty()) {
      return {Name(), false, absl::StrCat(ir::DTypeName(input), " wmma ", missing)};
    }
    return {Name(), true,
            absl::StrCat(ir::DTypeName(input), " inputs on sm_", hw.SmVersion(),
                         ": warp-level wmma m16n16k16 Tensor Core tiles, f32 accumulation",
                         hw.SmVersion() >= kMinSmAsyncCopy ? ", cp.async pipeline" : "")};
  }

 private:
  WmmaMatMulSketch sketch_;
};

}  // namespace

const MappingSketch& WmmaMatMulMapping() {
  static const WmmaMapping* const mapping = new WmmaMapping();
  return *mapping;
}

}  // namespace gtco::kernels
