// The implicit-GEMM convolution sketches "cuda_conv_tf32/v1" (mapping "tf32_mma": TF32 mma.sync,
// sm_80+) and "cuda_conv_simt/v1" (mapping "simt": fp32 FMA register tiles): the knobs, plans and
// pruning of the matmul sketches "cuda_mm_tf32/v1" and "cuda_mm_simt/v1" applied to the conv's
// GEMM (cuda_conv::GemmProblem), so a conv is searched like the matmul it is. The patch matrix is
// gathered one element per copy, so a gathered B has vw_b 1 (the SIMT knob; the TF32 kernel sets
// it itself). Kernels: generator.cc.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/ir/conv.h"
#include "common/kernels/cuda/conv/conv_gemm.h"
#include "common/kernels/cuda/conv/generator.h"
#include "common/kernels/cuda/matmul_common/cuda_matmul_common.h"
#include "common/kernels/family.h"
#include "common/kernels/registry.h"

namespace gtco::kernels {
namespace {

/// The CUDA sketch of a registered matmul mapping.
const CudaSketch& MatMulSketchOf(const MappingSketch& mapping) {
  return dynamic_cast<const schedule::CudaMappingSketch&>(mapping).cuda_sketch();
}

class ConvGemmSketch final : public CudaSketch {
 public:
  /// `vw_b_knob`: index of the matmul sketch's B vector-width knob, or -1 when it has none.
  ConvGemmSketch(const char* name, const CudaSketch& gemm, int vw_b_knob, CudaGenerator generator)
      : name_(name), gemm_(gemm), vw_b_knob_(vw_b_knob), generator_(generator) {}

  const char* Name() const override { return name_; }
  CudaGenerator Generator() const override { return generator_; }
  std::vector<std::string> KnobNames() const override { return gemm_.KnobNames(); }
  bool AppliesTo(const ir::Workload& w) const override {
    return w.anchor == ir::AnchorKind::kConv && w.inputs.size() >= 2;
  }

  std::vector<Knob> Knobs(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    std::vector<Knob> knobs = gemm_.Knobs(cuda_conv::GemmProblem(w), hw);
    if (Gathered(w) && vw_b_knob_ >= 0) knobs[vw_b_knob_].values = {1};
    return knobs;
  }

  CudaPlan Plan(const ir::Workload& w, const KnobValues& values) const override {
    CudaPlan plan = gemm_.Plan(cuda_conv::GemmProblem(w), values);
    if (Gathered(w)) plan.vector_width = 1;
    return plan;
  }

  const char* PruneRule(const ir::Workload& w, const target::HardwareInfo& hw,
                        const KnobValues& values) const override {
    if (Gathered(w) && vw_b_knob_ >= 0 && vw_b_knob_ < static_cast<int>(values.size()) &&
        values[vw_b_knob_] != 1) {
      return "alignment";  // patches are gathered one element at a time
    }
    return gemm_.PruneRule(cuda_conv::GemmProblem(w), hw, values);
  }

  bool Admits(const ir::Workload& w, const target::HardwareInfo& hw,
              const KnobValues& values) const override {
    return PruneRule(w, hw, values) == nullptr;
  }

 private:
  static bool Gathered(const ir::Workload& w) { return !ir::ConvIsPointwise(w.conv); }

  const char* name_;
  const CudaSketch& gemm_;
  int vw_b_knob_;
  CudaGenerator generator_;
};

/// A conv GEMM mapping: f32 X and W on sm_`min_sm` or newer.
class ConvGemmMapping final : public schedule::CudaMappingSketch {
 public:
  ConvGemmMapping(const char* name, int min_sm, std::string how, const char* sketch_name,
                  const CudaSketch& gemm, int vw_b_knob, CudaGenerator generator)
      : name_(name),
        min_sm_(min_sm),
        how_(std::move(how)),
        sketch_(sketch_name, gemm, vw_b_knob, generator) {}

  const char* Name() const override { return name_; }
  const CudaSketch& cuda_sketch() const override { return sketch_; }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    std::string reason = MissingCudaArch(hw, min_sm_);
    if (reason.empty()) reason = NonF32Operands(w);
    if (!reason.empty()) return {Name(), false, reason};
    return {Name(), true,
            absl::StrCat("implicit GEMM on ", how_, " (sm_", hw.SmVersion(), "), ",
                         ir::ConvIsPointwise(w.conv)
                             ? "the image's channel planes read as B"
                             : "patches gathered from the image into shared memory")};
  }

 private:
  const char* name_;
  int min_sm_;
  std::string how_;
  ConvGemmSketch sketch_;
};

}  // namespace

const MappingSketch& CudaTf32ConvMapping() {
  static const ConvGemmMapping* const mapping = new ConvGemmMapping(
      "tf32_mma", 80, "tensor cores (TF32 mma.sync m16n8k8, f32 accumulation)", "cuda_conv_tf32/v1",
      MatMulSketchOf(CudaTf32MatMulMapping()), /*vw_b_knob=*/-1, &GenerateTf32Conv);
  return *mapping;
}

const MappingSketch& CudaSimtConvMapping() {
  static const ConvGemmMapping* const mapping = new ConvGemmMapping(
      "simt", 70, "fp32 FMA register tiles", "cuda_conv_simt/v1",
      MatMulSketchOf(CudaSimtMatMulMapping()), cuda_matmul::kSimtVwB, &GenerateSimtConv);
  return *mapping;
}

}  // namespace gtco::kernels
