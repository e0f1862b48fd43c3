// The depthwise convolution sketch "cuda_conv_dw/v1" and its mapping "direct": convolutions with
// one input channel per group (MobileNet's), whose implicit GEMM (K/g rows of R*S) would leave
// all but a sliver of every matmul tile idle, computed directly on the sliding-window kernel of
// cuda/pool: one thread per output, the taps unrolled with their weights, the epilogue fused.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/kernels/cuda/conv/conv_gemm.h"
#include "common/kernels/cuda/pool/window_kernel.h"
#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

bool IsDepthwise(const ir::Workload& w) {
  return w.anchor == ir::AnchorKind::kConv && w.inputs.size() >= 2 && w.conv.groups > 1 &&
         w.conv.in_channels == w.conv.groups;
}

absl::StatusOr<std::string> GenerateDepthwiseConv(const ir::Workload& w, const KnobValues& values,
                                                  const CudaPlan&, const std::string& entry) {
  GTCO_RETURN_IF_ERROR(cuda_conv::CheckCudaConv(w));
  if (!IsDepthwise(w)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cuda_conv_dw/v1 computes depthwise convolutions only, not ", w.Description()));
  }
  return cuda_window::EmitWindowKernel(w, cuda_window::DepthwiseWindow(w.conv), values, entry);
}

class DepthwiseConvSketch final : public CudaSketch {
 public:
  const char* Name() const override { return "cuda_conv_dw/v1"; }
  CudaGenerator Generator() const override { return &GenerateDepthwiseConv; }
  std::vector<std::string> KnobNames() const override { return cuda_window::WindowKnobNames(); }
  bool AppliesTo(const ir::Workload& w) const override { return IsDepthwise(w); }
  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    return cuda_window::WindowKnobs(cuda_window::DepthwiseWindow(w.conv), hw);
  }
  CudaPlan Plan(const ir::Workload& w, const KnobValues& values) const override {
    return cuda_window::WindowPlan(cuda_window::DepthwiseWindow(w.conv), values);
  }
  const char* PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                        const KnobValues& values) const override {
    return cuda_window::WindowPruneRule(cuda_window::DepthwiseWindow(w.conv), hw, values);
  }
  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    return PruneRule(w, hw, values) == nullptr;
  }
};

class DepthwiseConvMapping final : public schedule::CudaMappingSketch {
 public:
  const char* Name() const override { return "direct"; }
  const CudaSketch& cuda_sketch() const override { return sketch_; }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    std::string reason = MissingCudaArch(hw, 70);
    if (reason.empty()) reason = NonF32Operands(w);
    if (!reason.empty()) return {Name(), false, reason};
    return {
        Name(), true,
        absl::StrCat("depthwise: one thread per output, ", w.conv.kernel_h, "x", w.conv.kernel_w,
                     " taps unrolled with their weights (sm_", hw.SmVersion(), ")")};
  }

 private:
  DepthwiseConvSketch sketch_;
};

}  // namespace

const MappingSketch& CudaDepthwiseConvMapping() {
  static const DepthwiseConvMapping* const mapping = new DepthwiseConvMapping();
  return *mapping;
}

}  // namespace gtco::kernels
