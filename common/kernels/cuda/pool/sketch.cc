// The CUDA pooling sketch "cuda_pool/v1" and its mapping "simt": ONNX MaxPool / AveragePool
// (pads, strides, dilations, ceil_mode, count_include_pad) on the sliding-window kernel of
// window_kernel.h, the epilogue fused into the store. GlobalAveragePool is a reduce_mean
// workload (cuda/rows), not a pool.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/ir/pool.h"
#include "common/kernels/cuda/pool/window_kernel.h"
#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

absl::StatusOr<std::string> GenerateCudaPool(const ir::Workload& w, const KnobValues& values,
                                             const CudaPlan&, const std::string& entry) {
  if (w.anchor != ir::AnchorKind::kPool) {
    return absl::InvalidArgumentError("cuda_pool/v1 generates pool workloads only");
  }
  GTCO_RETURN_IF_ERROR(w.Validate());
  return cuda_window::EmitWindowKernel(w, cuda_window::PoolWindow(w.pool), values, entry);
}

class CudaPoolSketch final : public CudaSketch {
 public:
  const char* Name() const override { return "cuda_pool/v1"; }
  CudaGenerator Generator() const override { return &GenerateCudaPool; }
  std::vector<std::string> KnobNames() const override { return cuda_window::WindowKnobNames(); }
  bool AppliesTo(const ir::Workload& w) const override { return w.anchor == ir::AnchorKind::kPool; }
  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    return cuda_window::WindowKnobs(cuda_window::PoolWindow(w.pool), hw);
  }
  CudaPlan Plan(const ir::Workload& w, const KnobValues& values) const override {
    return cuda_window::WindowPlan(cuda_window::PoolWindow(w.pool), values);
  }
  const char* PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                        const KnobValues& values) const override {
    return cuda_window::WindowPruneRule(cuda_window::PoolWindow(w.pool), hw, values);
  }
  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    return PruneRule(w, hw, values) == nullptr;
  }
};

class PoolMapping final : public schedule::CudaMappingSketch {
 public:
  const char* Name() const override { return "simt"; }
  const CudaSketch& cuda_sketch() const override { return sketch_; }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    std::string reason = MissingCudaArch(hw, 70);
    if (reason.empty()) reason = NonF32Operands(w);
    if (!reason.empty()) return {Name(), false, reason};
    return {Name(), true,
            absl::StrCat(w.pool.max ? "max" : "average",
                         " pooling: one thread per output, the window's taps unrolled (sm_",
                         hw.SmVersion(), ")")};
  }

 private:
  CudaPoolSketch sketch_;
};

}  // namespace

const MappingSketch& CudaPoolMapping() {
  static const PoolMapping* const mapping = new PoolMapping();
  return *mapping;
}

}  // namespace gtco::kernels
