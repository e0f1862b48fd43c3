// The f16/bf16 tensor-core matmul sketch "cuda_mm_mma/v1" and its mapping "mma_sync":
// mma.sync.m16n8k16 with f32 accumulation, fragments loaded by ldmatrix from padded shared
// memory, fed by a cp.async multistage pipeline (sm_80+). Kernels: matmul_mma_gen.cc.
#include <string>

#include "absl/strings/str_cat.h"
#include "common/kernels/cuda/matmul_common/cuda_matmul_tensor_core.h"
#include "common/kernels/cuda/matmul_mma/generator.h"
#include "common/kernels/family.h"

namespace gtco::kernels {
namespace {

class MmaSyncMatMulMapping final : public CudaMappingSketch {
 public:
  const char* Name() const override { return "mma_sync"; }
  const CudaSketch& cuda_sketch() const override { return sketch_; }
  MappingVerdict Explain(const ir::Workload& w, const target::HardwareInfo& hw) const override {
    const std::string reason = MissingCudaArch(hw, 80);
    if (!reason.empty()) return {Name(), false, reason};
    const ir::DType a = w.inputs.size() > 0 ? w.inputs[0].dtype : ir::DType::kF32;
    const ir::DType b = w.inputs.size() > 1 ? w.inputs[1].dtype : ir::DType::kF32;
    if (!cuda_matmul::Is16BitFloat(a) || a != b) {
      const int input_idx = cuda_matmul::Is16BitFloat(a) ? 1 : 0;
      return {Name(), false,
              absl::StrCat("needs f16 or bf16 operands of one type (in", input_idx, " is ",
                           ir::DTypeName(input_idx == 0 ? a : b), ")")};
    }
    if (!cuda_matmul::IsFloatDType(w.output.dtype)) {
      return {Name(), false,
              absl::StrCat("needs a floating-point output (out is ", ir::DTypeName(w.output.dtype),
                           ")")};
    }
    return {Name(), true,
            absl::StrCat("sm_", hw.SmVersion(), " tensor cores: ", ir::DTypeName(a),
                         " mma.sync m16n8k16 with f32 accumulation, ldmatrix fragments")};
  }

 private:
  cuda_matmul::TensorCoreMatMulSketch sketch_{{"cuda_mm_mma/v1",
                                               /*mma_m=*/16,
                                               /*mma_n=*/8,
                                               /*mma_k=*/16,
                                               /*bk_values=*/{32, 64, 16},
                                               /*stage_values=*/{3, 4, 2}, cuda_matmul::kMmaPad,
                                               cuda_matmul::kMmaPad,
                                               /*warp_n_multiple=*/16, &GenerateMmaSyncMatMul,
                                               /*split_values=*/{}}};
};

}  // namespace

const MappingSketch& CudaMmaSyncMatMulMapping() {
  static const MmaSyncMatMulMapping* const mapping = new MmaSyncMatMulMapping();
  return *mapping;
}

}  // namespace gtco::kernels
