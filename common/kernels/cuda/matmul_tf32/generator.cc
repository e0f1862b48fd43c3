// CUDA C for "cuda_mm_tf32/v1": f32 matmuls on tensor cores, each operand rounded to TF32
// (cvt.rna.tf32.f32) and multiplied by mma.sync.m16n8k8 with f32 accumulation, operands
// streamed by the cp.async pipeline of matmul_tensor_core_kernel.cc.
//
// Fragment layouts (PTX ISA, mma.m16n8k8 with .tf32; g = lane / 4, t = lane % 4):
//  A (16x8, row): a0 = (g, t), a1 = (g+8, t), a2 = (g, t+4), a3 = (g+8, t+4)   (row, k)
//  B (8x8, col):  b0 = (t, g), b1 = (t+4, g)                                   (k, n)
// The sum over k does not depend on which physical k each slot holds, as long as A and B agree:
// this kernel maps slot t to k = 2t and slot t+4 to k = 2t+1 of each k8 step, so that a
// k-contiguous operand's two values per row are one 8-byte shared-memory read.
#include "common/kernels/cuda/matmul_tf32/generator.h"

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

const char* const kTf32Helpers = R"(
__device__ __forceinline__ unsigned int gtco_tf32(float value) {
  unsigned int bits;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(bits) : "f"(value));
  return bits;
}
__device__ __forceinline__ void gtco_mma(float (&d)[4], const unsigned int (&a)[4],
                                         const unsigned int (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
)";

/// Per-lane element offsets of the fragment reads inside one stage, for mi = ni = kk = 0.
std::string Tf32Setup(const TensorCoreTiling& tiling) {
  std::string code;
  absl::StrAppend(&code, "  const int gtco_fg = gtco_lane >> 2, gtco_ft = gtco_lane & 3;\n");
  if (tiling.a_k_contiguous) {  // [bm][bk+pad]: A(row, k) at row * stride + k
    absl::StrAppend(&code, "  const int gtco_a_off = (gtco_warp_m + gtco_fg) * ", tiling.a_stride,
                    " + 2 * gtco_ft;\n");
  } else {  // [bk][bm+pad]: A(row, k) at k * stride + row
    absl::StrAppend(&code, "  const int gtco_a_off = 2 * gtco_ft * ", tiling.a_stride,
                    " + gtco_warp_m + gtco_fg;\n");
  }
  if (tiling.b_k_contiguous) {  // [bn][bk+pad]: B(k, n) at n * stride + k
    absl::StrAppend(&code, "  const int gtco_b_off = (gtco_warp_n + gtco_fg) * ", tiling.b_stride,
                    " + 2 * gtco_ft;\n");
  } else {  // [bk][bn+pad]: B(k, n) at k * stride + n
    absl::StrAppend(&code, "  const int gtco_b_off = 2 * gtco_ft * ", tiling.b_stride,
                    " + gtco_warp_n + gtco_fg;\n");
  }
  return code;
}

/// Statements filling gtco_fa[mi] (a0..a3 at physical k 2t, 2t, 2t+1, 2t+1; rows g, g+8).
std::string LoadAFragment(const TensorCoreTiling& tiling) {
  const int64_t s = tiling.a_stride;
  if (tiling.a_k_contiguous) {
    return absl::StrCat(
        "          const float* gtco_p = gtco_as + gtco_a_off + mi * ", 16 * s, " + kk;\n",
        "          const float2 gtco_lo = *reinterpret_cast<const float2*>(gtco_p);\n",
        "          const float2 gtco_hi = *reinterpret_cast<const float2*>(gtco_p + ", 8 * s,
        ");\n", "          gtco_fa[mi][0] = gtco_tf32(gtco_lo.x);\n",
        "          gtco_fa[mi][2] = gtco_tf32(gtco_lo.y);\n",
        "          gtco_fa[mi][1] = gtco_tf32(gtco_hi.x);\n",
        "          gtco_fa[mi][3] = gtco_tf32(gtco_hi.y);\n");
  }
  return absl::StrCat("          const float* gtco_p = gtco_as + gtco_a_off + mi * 16 + kk * ", s,
                      ";\n", "          gtco_fa[mi][0] = gtco_tf32(gtco_p[0]);\n",
                      "          gtco_fa[mi][2] = gtco_tf32(gtco_p[", s, "]);\n",
                      "          gtco_fa[mi][1] = gtco_tf32(gtco_p[8]);\n",
                      "          gtco_fa[mi][3] = gtco_tf32(gtco_p[", s + 8, "]);\n");
}

/// Statements filling gtco_fb[ni] (b0, b1 at physical k 2t, 2t+1; column g).
std::string LoadBFragment(const TensorCoreTiling& tiling) {
  const int64_t s = tiling.b_stride;
  if (tiling.b_k_contiguous) {
    return absl::StrCat(
        "          const float2 gtco_v = *reinterpret_cast<const float2*>(gtco_bs + gtco_b_off + "
        "ni * ",
        8 * s, " + kk);\n", "          gtco_fb[ni][0] = gtco_tf32(gtco_v.x);\n",
        "          gtco_fb[ni][1] = gtco_tf32(gtco_v.y);\n");
  }
  return absl::StrCat("          const float* gtco_p = gtco_bs + gtco_b_off + ni * 8 + kk * ", s,
                      ";\n", "          gtco_fb[ni][0] = gtco_tf32(gtco_p[0]);\n",
                      "          gtco_fb[ni][1] = gtco_tf32(gtco_p[", s, "]);\n");
}

std::string Tf32ConsumeStage(const TensorCoreTiling& tiling, const std::string& stage) {
  const int64_t mi_count = tiling.wm / 16, ni_count = tiling.wn / 8;
  std::string code = "    {\n";
  absl::StrAppend(&code, "      const float* gtco_as = gtco_sa + (", stage, ") * kAStage;\n");
  absl::StrAppend(&code, "      const float* gtco_bs = gtco_sb + (", stage, ") * kBStage;\n");
  absl::StrAppend(&code, "      #pragma unroll\n      for (int kk = 0; kk < ", tiling.bk,
                  "; kk += 8) {\n");
  absl::StrAppend(&code, "        unsigned int gtco_fa[", mi_count, "][4];\n");
  absl::StrAppend(&code, "        unsigned int gtco_fb[", ni_count, "][2];\n");
  absl::StrAppend(&code, "        #pragma unroll\n        for (int mi = 0; mi < ", mi_count,
                  "; ++mi) {\n", LoadAFragment(tiling), "        }\n");
  absl::StrAppend(&code, "        #pragma unroll\n        for (int ni = 0; ni < ", ni_count,
                  "; ++ni) {\n", LoadBFragment(tiling), "        }\n");
  absl::StrAppend(&code, "        #pragma unroll\n        for (int mi = 0; mi < ", mi_count,
                  "; ++mi)\n          #pragma unroll\n          for (int ni = 0; ni < ", ni_count,
                  "; ++ni) gtco_mma(gtco_acc[mi][ni], gtco_fa[mi], gtco_fb[ni]);\n");
  absl::StrAppend(&code, "      }\n    }\n");
  return code;
}

}  // namespace

absl::StatusOr<std::string> GenerateTf32MatMul(const ir::Workload& w, const KnobValues& values,
                                               const CudaPlan& plan, const std::string& entry) {
  GTCO_RETURN_IF_ERROR(cuda_matmul::CheckCudaMatMul(w));
  return EmitTf32MatMul(w, values, plan, entry, mm::MatMulOperands{});
}

absl::StatusOr<std::string> EmitTf32MatMul(const ir::Workload& w, const KnobValues& values,
                                           const CudaPlan& plan, const std::string& entry,
                                           const mm::MatMulOperands& operands) {
  namespace cm = cuda_matmul;
  if (w.inputs[0].dtype != ir::DType::kF32 || w.inputs[1].dtype != ir::DType::kF32 ||
      w.output.dtype != ir::DType::kF32) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuda_mm_tf32/v1 needs f32 operands and output, not ", w.Description()));
  }
  // Six decisions; "cuda_mm_tf32_split/v1" adds the K split.
  if (values.size() != 6 && values.size() != 7) {
    return absl::InvalidArgumentError("cuda_mm_tf32/v1 expects 6 decisions (7 with a K split)");
  }
  TensorCoreTiling tiling = cm::MakeTensorCoreTiling(
      w, values[cm::kTcBm], values[cm::kTcBn], values[cm::kTcBk], values[cm::kTcWm],
      values[cm::kTcWn], static_cast<int>(values[cm::kTcStages]), cm::kTf32PadKContiguous,
      cm::kTf32PadKStrided);
  if (values.size() == 7) tiling.split = values[cm::kTcSplit];  // CheckTensorCoreTiling: 1-8
  // A gathered B is copied element by element (its rows are not contiguous in memory).
  if (operands.b_gather.active()) tiling.vw_b = 1;
  GTCO_RETURN_IF_ERROR(CheckTensorCoreTiling(tiling, /*mma_k=*/8, /*wn_multiple=*/8));
  if (plan.Threads() != tiling.Threads()) {
    return absl::InvalidArgumentError("cuda_mm_tf32/v1: plan and knobs disagree");
  }
  TensorCoreKernelParts parts;
  parts.helpers = kTf32Helpers;
  parts.setup = Tf32Setup(tiling);
  parts.consume_stage = [&tiling](const std::string& stage) {
    return Tf32ConsumeStage(tiling, stage);
  };
  return EmitTensorCoreMatMul(w, tiling, entry, parts, operands);
}

}  // namespace gtco::kernels
