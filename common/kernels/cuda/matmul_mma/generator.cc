// CUDA C for "cuda_mm_mma/v1": f16/bf16 matmuls on tensor cores with mma.sync.m16n8k16 (f32
// accumulation), fragments loaded by ldmatrix.x4 from padded shared memory (.trans for an
// operand stored with K strided), operands streamed by the cp.async pipeline of
// matmul_tensor_core_kernel.cc.
//
// Fragment layouts (PTX ISA, mma.m16n8k16 with .f16/.bf16; g = lane / 4, t = lane % 4):
//  A (16x16, row): a0 = (g, 2t..2t+1), a1 = (g+8, 2t..2t+1), a2 = (g, 2t+8..2t+9),
//                  a3 = (g+8, 2t+8..2t+9)                         (row, k), low half first
//  B (16x8, col):  b0 = (2t..2t+1, g), b1 = (2t+8..2t+9, g)       (k, n)
// ldmatrix.x4 hands lane L the elements (L/4, 2(L%4)..+1) of matrix i into register i, where
// matrix i's eight row addresses come from lanes 8i..8i+7 (.trans: the transposed matrix), so
// matrix i is chosen as the 8x8 block that register i of the fragment covers.
#include "common/kernels/cuda/matmul_mma/generator.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/kernels/cuda/matmul_common/cuda_matmul_common.h"
#include "common/kernels/cuda/matmul_common/matmul_tensor_core_kernel.h"
#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

using mm::CheckTensorCoreTiling;
using mm::EmitTensorCoreMatMul;
using mm::TensorCoreKernelParts;

using cuda_matmul::TensorCoreTiling;

std::string MmaHelpers(ir::DType dtype) {
  const char* type = dtype == ir::DType::kBF16 ? "bf16" : "f16";
  return absl::StrCat(R"(
__device__ __forceinline__ void gtco_ldsm_x4(unsigned int (&r)[4], unsigned int addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void gtco_ldsm_x4_trans(unsigned int (&r)[4], unsigned int addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void gtco_mma(float (&d)[4], const unsigned int (&a)[4],
                                         unsigned int b0, unsigned int b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.)",
                      type, ".", type,
                      R"(.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
)");
}

/// Per-lane byte offsets of the ldmatrix row addresses inside one stage, for mi = nj = kk = 0.
std::string MmaSetup(const TensorCoreTiling& tiling) {
  std::string code;
  // Lane L addresses row L%8 of matrix L/8.
  absl::StrAppend(&code, "  const int gtco_lrow = gtco_lane & 7;\n");
  absl::StrAppend(&code, "  const int gtco_lmat_lo = (gtco_lane >> 3) & 1;\n");
  absl::StrAppend(&code, "  const int gtco_lmat_hi = (gtco_lane >> 4) & 1;\n");
  if (tiling.a_k_contiguous) {
    // [bm][bk+pad]: matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), ...
    absl::StrAppend(&code,
                    "  const unsigned int gtco_a_lane = ((gtco_warp_m + gtco_lrow + "
                    "gtco_lmat_lo * 8) * ",
                    tiling.a_stride, " + gtco_lmat_hi * 8) * 2;\n");
  } else {
    // [bk][bm+pad], transposed loads: matrix i covers k rows (i/2)*8.., m columns (i%2)*8..
    absl::StrAppend(&code, "  const unsigned int gtco_a_lane = ((gtco_lrow + gtco_lmat_hi * 8) * ",
                    tiling.a_stride, " + gtco_warp_m + gtco_lmat_lo * 8) * 2;\n");
  }
  if (tiling.b_k_contiguous) {
    // [bn][bk+pad]: matrices (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15)
    absl::StrAppend(&code,
                    "  const unsigned int gtco_b_lane = ((gtco_warp_n + gtco_lrow + "
                    "gtco_lmat_hi * 8) * ",
                    tiling.b_stride, " + gtco_lmat_lo * 8) * 2;\n");
  } else {
    // [bk][bn+pad], transposed loads: matrix i covers k rows (i%2)*8.., n columns (i/2)*8..
    absl::StrAppend(&code, "  const unsigned int gtco_b_lane = ((gtco_lrow + gtco_lmat_lo * 8) * ",
                    tiling.b_stride, " + gtco_warp_n + gtco_lmat_hi * 8) * 2;\n");
  }
  return code;
}

std::string MmaConsumeStage(const TensorCoreTiling& tiling, const std::string& stage) {
  const int64_t mi_count = tiling.wm / 16, ni_count = tiling.wn / 8;
  // Byte steps between fragments: per 16 rows of A (mi), per 16 columns of B (nj), per k16.
  const int64_t a_mi_step = tiling.a_k_contiguous ? 16 * tiling.a_stride * 2 : 32;
  const int64_t a_kk_step = tiling.a_k_contiguous ? 32 : 16 * tiling.a_stride * 2;
  const int64_t b_nj_step = tiling.b_k_contiguous ? 16 * tiling.b_stride * 2 : 32;
  const int64_t b_kk_step = tiling.b_k_contiguous ? 32 : 16 * tiling.b_stride * 2;
  const char* a_load = tiling.a_k_contiguous ? "gtco_ldsm_x4" : "gtco_ldsm_x4_trans";
  const char* b_load = tiling.b_k_contiguous ? "gtco_ldsm_x4" : "gtco_ldsm_x4_trans";
  std::string code = "    {\n";
  absl::StrAppend(&code, "      const unsigned int gtco_a_base = gtco_smem_base + (", stage, ") * ",
                  tiling.AStageBytes(), " + gtco_a_lane;\n");
  absl::StrAppend(&code, "      const unsigned int gtco_b_base = gtco_smem_base + ",
                  tiling.stages * tiling.AStageBytes(), " + (", stage, ") * ", tiling.BStageBytes(),
                  " + gtco_b_lane;\n");
  absl::StrAppend(&code, "      #pragma unroll\n      for (int kk = 0; kk < ", tiling.bk / 16,
                  "; ++kk) {\n");
  absl::StrAppend(&code, "        unsigned int gtco_fa[", mi_count, "][4];\n");
  absl::StrAppend(&code, "        unsigned int gtco_fb[", ni_count / 2, "][4];\n");
  absl::StrAppend(&code, "        #pragma unroll\n        for (int mi = 0; mi < ", mi_count,
                  "; ++mi) ", a_load, "(gtco_fa[mi], gtco_a_base + mi * ", a_mi_step, " + kk * ",
                  a_kk_step, ");\n");
  // One x4 load holds (b0, b1) of two adjacent n8 tiles: registers 0-1 and 2-3.
  absl::StrAppend(&code, "        #pragma unroll\n        for (int nj = 0; nj < ", ni_count / 2,
                  "; ++nj) ", b_load, "(gtco_fb[nj], gtco_b_base + nj * ", b_nj_step, " + kk * ",
                  b_kk_step, ");\n");
  absl::StrAppend(&code, "        #pragma unroll\n        for (int mi = 0; mi < ", mi_count,
                  "; ++mi)\n          #pragma unroll\n          for (int ni = 0; ni < ", ni_count,
                  "; ++ni)\n            gtco_mma(gtco_acc[mi][ni], gtco_fa[mi], "
                  "gtco_fb[ni >> 1][(ni & 1) * 2], gtco_fb[ni >> 1][(ni & 1) * 2 + 1]);\n");
  absl::StrAppend(&code, "      }\n    }\n");
  return code;
}

}  // namespace

absl::StatusOr<std::string> GenerateMmaSyncMatMul(const ir::Workload& w, const KnobValues& values,
                                                  const CudaPlan& plan, const std::string& entry) {
  namespace cm = cuda_matmul;
  GTCO_RETURN_IF_ERROR(cm::CheckCudaMatMul(w));
  const ir::DType dtype = w.inputs[0].dtype;
  if (!cm::Is16BitFloat(dtype) || w.inputs[1].dtype != dtype || !cm::IsFloatDType(w.output.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cuda_mm_mma/v1 needs f16 or bf16 operands of one type and a float output, not ",
        w.Description()));
  }
  if (values.size() != 6) {
    return absl::InvalidArgumentError("cuda_mm_mma/v1 expects 6 decisions");
  }
  const TensorCoreTiling tiling = cm::MakeTensorCoreTiling(
      w, values[cm::kTcBm], values[cm::kTcBn], values[cm::kTcBk], values[cm::kTcWm],
      values[cm::kTcWn], static_cast<int>(values[cm::kTcStages]), cm::kMmaPad, cm::kMmaPad);
  GTCO_RETURN_IF_ERROR(CheckTensorCoreTiling(tiling, /*mma_k=*/16, /*wn_multiple=*/16));
  if (plan.Threads() != tiling.Threads()) {
    return absl::InvalidArgumentError("cuda_mm_mma/v1: plan and knobs disagree");
  }
  TensorCoreKernelParts parts;
  parts.helpers = MmaHelpers(dtype);
  parts.setup = MmaSetup(tiling);
  parts.consume_stage = [&tiling](const std::string& stage) {
    return MmaConsumeStage(tiling, stage);
  };
  return EmitTensorCoreMatMul(w, tiling, entry, parts);
}

}  // namespace gtco::kernels
