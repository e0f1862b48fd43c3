// The implicit-GEMM view of a convolution for the CUDA matmul kernels: its problem, epilogue
// shapes, operand pointers and the patch gather.
#include "common/kernels/cuda/conv/conv_gemm.h"

#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/ir/conv.h"
#include "common/kernels/family.h"
#include "common/util/status.h"

namespace gtco::kernels::cuda_conv {
namespace {

/// The gather's statements for B element (row, col) = (k, j) of conv `p` (see conv_gemm.h), read
/// from gtco_b, the batch entry's first input channel of the group.
std::string EmitPatchGather(const ir::ConvParams& p, const std::string& row,
                            const std::string& col) {
  const ir::MatMulParams view = ir::ConvGemmView(p);
  const int64_t taps = p.kernel_h * p.kernel_w, out_w = ir::ConvOutW(p);
  std::string code;
  absl::StrAppend(&code, "    const int gtco_pk = ", row, ", gtco_pj = ", col, ";\n");
  // Channel, kernel row and column of k; output row and column of j (divisions by constants).
  absl::StrAppend(&code, "    const int gtco_pc = gtco_pk / ", taps,
                  ", gtco_pt = gtco_pk - gtco_pc * ", taps, ";\n");
  absl::StrAppend(&code, "    const int gtco_pr = gtco_pt / ", p.kernel_w,
                  ", gtco_ps = gtco_pt - gtco_pr * ", p.kernel_w, ";\n");
  absl::StrAppend(&code, "    const int gtco_poh = gtco_pj / ", out_w,
                  ", gtco_pow = gtco_pj - gtco_poh * ", out_w, ";\n");
  absl::StrAppend(&code, "    const int gtco_pih = gtco_poh * ", p.stride_h, " + gtco_pr * ",
                  p.dilation_h, " - ", p.pad_top, ";\n");
  absl::StrAppend(&code, "    const int gtco_piw = gtco_pow * ", p.stride_w, " + gtco_ps * ",
                  p.dilation_w, " - ", p.pad_left, ";\n");
  // Elements past the GEMM's K or N and taps in the padding read as zero.
  absl::StrAppend(&code, "    const bool gtco_ok = gtco_pk < ", view.k, " && gtco_pj < ", view.n,
                  " && gtco_pih >= 0 && gtco_pih < ", p.in_h, " && gtco_piw >= 0 && gtco_piw < ",
                  p.in_w, ";\n");
  absl::StrAppend(&code, "    const float* gtco_src = gtco_b + (gtco_ok ? gtco_pc * ",
                  p.in_h * p.in_w, " + gtco_pih * ", p.in_w, " + gtco_piw : 0);\n");
  return code;
}

}  // namespace

ir::Workload GemmProblem(const ir::Workload& w) {
  const ir::ConvParams& p = w.conv;
  ir::Workload problem;
  problem.anchor = ir::AnchorKind::kMatMul;
  problem.matmul = ir::ConvGemmView(p);
  problem.matmul.a_batched = false;  // A is addressed by GemmOperands (group of the entry)
  problem.matmul.b_batched = true;
  problem.inputs.assign(w.inputs.begin(), w.inputs.begin() + std::min<size_t>(2, w.inputs.size()));
  problem.num_anchor_inputs = static_cast<int>(problem.inputs.size());
  problem.output = {w.output.dtype, {p.batch, p.out_channels, ir::ConvOutH(p) * ir::ConvOutW(p)}};
  return problem;
}

absl::StatusOr<ir::Workload> GemmView(const ir::Workload& w) {
  ir::Workload view = GemmProblem(w);
  for (size_t index = 2; index < w.inputs.size(); ++index) {
    GTCO_ASSIGN_OR_RETURN(std::vector<int64_t> view_shape, ConvEpilogueInputShape(w, index));
    view.inputs.push_back({w.inputs[index].dtype, std::move(view_shape)});
  }
  view.epilogue = w.epilogue;
  return view;
}

mm::MatMulOperands GemmOperands(const ir::ConvParams& p) {
  const ir::MatMulParams view = ir::ConvGemmView(p);
  mm::MatMulOperands operands;
  // The conv's inputs are X (in0) and W (in1): A is the weights, B the image.
  operands.a_pointer = p.groups > 1 ? absl::StrCat("in1 + (long long)(gtco_batch % ", p.groups,
                                                   ") * ", view.m * view.k, "LL")
                                    : std::string("in1");
  // Entry b = n * groups + g starts at input channel n * C + g * C/g = b * C/g.
  operands.b_pointer = absl::StrCat("in0 + (long long)gtco_batch * ",
                                    (p.in_channels / p.groups) * p.in_h * p.in_w, "LL");
  if (!ir::ConvIsPointwise(p)) {
    operands.b_gather.emit = [p](const std::string& row, const std::string& col) {
      return EmitPatchGather(p, row, col);
    };
  }
  return operands;
}

absl::Status CheckCudaConv(const ir::Workload& w) {
  if (w.anchor != ir::AnchorKind::kConv) {
    return absl::InvalidArgumentError("CUDA conv kernels need a conv workload");
  }
  GTCO_RETURN_IF_ERROR(w.Validate());
  if (w.inputs[0].dtype != ir::DType::kF32 || w.inputs[1].dtype != ir::DType::kF32 ||
      w.output.dtype != ir::DType::kF32) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA conv kernels need f32 X, W and output, not ", w.Description()));
  }
  // Patch offsets inside an image slice and GEMM coordinates are 32-bit ints in the kernels.
  constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();
  const ir::ConvParams& p = w.conv;
  const ir::MatMulParams view = ir::ConvGemmView(p);
  if (NumElements(w.inputs[0].shape) > kMaxIndex || NumElements(w.inputs[1].shape) > kMaxIndex ||
      NumElements(w.output.shape) > kMaxIndex || view.k * view.n > kMaxIndex) {
    return absl::InvalidArgumentError(
        absl::StrCat("conv ", w.Description(), " has a tensor of 2^31 elements or more"));
  }
  return absl::OkStatus();
}

}  // namespace gtco::kernels::cuda_conv
