// The TF32 tensor-core matmul sketch "cuda_mm_tf32/v1" and its mapping "tf32_mma": f32 operands
// rounded to TF32 (cvt.rna) and multiplied by mma.sync.m16n8k8 with f32 accumulation, fed by a
// cp.async multistage pipeline (sm_80+). Kernels: matmul_tf32_gen.cc.
#include <string>

#include "absl/strings/str_cat.h"
#include "common/kernels/cuda/matmul_common/cuda_matmul_tensor_core.h"
#include "common/kernels/cuda/matmul_tf32/generator.h"
#include "common/kernels/family.h"

namespace gtco::kernels {
namespace {

class Tf32MatMulMapping final : public CudaMappingSketch {
 public:
  const char* Name() const override { return "tf32_mma"; }
  const CudaSketch& cuda_sketch() const override { return sketch_; }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    std::string reason = MissingCudaArch(hw, 80);
    if (reason.empty()) reason = NonF32Operands(w);
    if (!reason.empty()) return {Name(), false, reason};
    return {Name(), true,
            absl::StrCat("sm_", hw.SmVersion(),
                         " tensor cores: f32 operands rounded to TF32, mma.sync m16n8k8 with f32 "
                         "accumulation")};
  }

 private:
  cuda_matmul::TensorCoreMatMulSketch sketch_{
      {"cuda_mm_tf32/v1",
       /*mma_m=*/16,
       /*mma_n=*/8,
       /*mma_k=*/8,
       /*bk_values=*/{32, 16},
       /*stage_values=*/{3, 2, 4}, cuda_matmul::kTf32PadKContiguous, cuda_matmul::kTf32PadKStrided,
       /*warp_n_multiple=*/8, &GenerateTf32MatMul}};
};

}  // namespace

const MappingSketch& CudaTf32MatMulMapping() {
  static const Tf32MatMulMapping* const mapping = new Tf32MatMulMapping();
  return *mapping;
}

}  // namespace gtco::kernels
