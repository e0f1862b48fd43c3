// CUDA C of the implicit-GEMM convolutions: the conv's GEMM view (conv_gemm.h) handed to the SIMT
// and TF32 matmul kernels with its operands located by cuda_conv::GemmOperands, so that tiling,
// pipelines and the fused epilogue are the matmul kernels' own.
#include "common/kernels/cuda/conv/generator.h"

#include "absl/strings/str_cat.h"
#include "common/ir/conv.h"
#include "common/kernels/cuda/conv/conv_gemm.h"
#include "common/kernels/cuda/matmul_common/cuda_matmul_common.h"
#include "common/kernels/cuda/matmul_simt/generator.h"
#include "common/kernels/cuda/matmul_tf32/generator.h"
#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels {

absl::StatusOr<std::string> GenerateSimtConv(const ir::Workload& w, const KnobValues& values,
                                             const CudaPlan& plan, const std::string& entry) {
  GTCO_RETURN_IF_ERROR(cuda_conv::CheckCudaConv(w));
  GTCO_ASSIGN_OR_RETURN(const ir::Workload view, cuda_conv::GemmView(w));
  if (values.size() > cuda_matmul::kSimtVwB && !ir::ConvIsPointwise(w.conv) &&
      values[cuda_matmul::kSimtVwB] != 1) {
    return absl::InvalidArgumentError(absl::StrCat("cuda_conv_simt/v1 gathers the patches of ",
                                                   w.Description(), " one at a time (vw_b=1)"));
  }
  return EmitSimtMatMul(view, values, plan, entry, cuda_conv::GemmOperands(w.conv));
}

absl::StatusOr<std::string> GenerateTf32Conv(const ir::Workload& w, const KnobValues& values,
                                             const CudaPlan& plan, const std::string& entry) {
  GTCO_RETURN_IF_ERROR(cuda_conv::CheckCudaConv(w));
  GTCO_ASSIGN_OR_RETURN(const ir::Workload view, cuda_conv::GemmView(w));
  return EmitTf32MatMul(view, values, plan, entry, cuda_conv::GemmOperands(w.conv));
}

}  // namespace gtco::kernels
