// Tensor Core matmul configurations: operand dtype rules, knob resolution and launch plans of the
// wmma and wgmma sketches.
#include "common/kernels/cuda/matmul_common/cuda_matmul_tc.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/kernels/cuda/matmul_common/cuda_matmul_common.h"
#include "common/kernels/family.h"
#include "common/schedule/lower_util.h"
#include "common/util/status.h"

namespace gtco::kernels {
namespace {

/// Registers a thread needs beside its accumulators and fragments: tile addresses, loop
/// counters, the copy loop's indices and the epilogue's row and column.
constexpr int kOverheadRegisters = 40;

absl::Status CheckTensorCoreMatMul(const ir::Workload& w, const char* sketch) {
  if (w.anchor != ir::AnchorKind::kMatMul || TensorCoreInputType(w) == ir::DType::kF32) {
    return absl::InvalidArgumentError(
        absl::StrCat(sketch, " needs an f16 or bf16 matmul, not ", w.Description()));
  }
  return cuda_matmul::CheckCudaMatMul(w);
}

}  // namespace

ir::DType TensorCoreInputType(const ir::Workload& w) {
  if (w.anchor != ir::AnchorKind::kMatMul || w.inputs.size() < 2) return ir::DType::kF32;
  const ir::DType a = w.inputs[0].dtype, b = w.inputs[1].dtype, out = w.output.dtype;
  if (a != b || !cuda_matmul::Is16BitFloat(a)) return ir::DType::kF32;
  if (out != ir::DType::kF32 && !cuda_matmul::Is16BitFloat(out)) return ir::DType::kF32;
  if (w.matmul.a_zero_point != 0 || w.matmul.b_zero_point != 0) return ir::DType::kF32;
  return a;
}

std::string TensorCoreDTypeProblem(const ir::Workload& w) {
  if (TensorCoreInputType(w) != ir::DType::kF32) return "";
  if (w.inputs.size() < 2) return "needs a matmul with inputs A and B";
  const ir::DType a = w.inputs[0].dtype, b = w.inputs[1].dtype;
  if (a == ir::DType::kF32 && b == ir::DType::kF32) {
    return "needs f16 or bf16 inputs (f32 matmuls get TF32 Tensor Cores from another mapping)";
  }
  if (!cuda_matmul::Is16BitFloat(a) || !cuda_matmul::Is16BitFloat(b)) {
    return absl::StrCat("needs f16 or bf16 inputs (in0 is ", ir::DTypeName(a), ", in1 is ",
                        ir::DTypeName(b), ")");
  }
  if (a != b) {
    return absl::StrCat("needs both inputs of one type (in0 is ", ir::DTypeName(a), ", in1 is ",
                        ir::DTypeName(b), ")");
  }
  return absl::StrCat("needs an f32, f16 or bf16 output (out is ", ir::DTypeName(w.output.dtype),
                      ")");
}

bool TileExceedsShape(int64_t tile, int64_t smallest, int64_t extent, int64_t granule) {
  return tile > smallest && tile - granule >= RoundUp(extent, granule);
}

bool OperandAAligned(const ir::MatMulParams& p) {
  return cuda_matmul::WidestAlignedChunk(cuda_matmul::AContiguousExtent(p), ir::DType::kF16) == 8;
}
bool OperandBAligned(const ir::MatMulParams& p) {
  return cuda_matmul::WidestAlignedChunk(cuda_matmul::BContiguousExtent(p), ir::DType::kF16) == 8;
}

// ---- wmma ----

WmmaMatMulConfig WmmaConfigOf(const ir::Workload& w, const KnobValues& values) {
  WmmaMatMulConfig c;
  c.bm = values[kWmmaBm];
  c.bn = values[kWmmaBn];
  c.bk = values[kWmmaBk];
  c.wm = values[kWmmaWm];
  c.wn = values[kWmmaWn];
  c.stages = values[kWmmaStages];
  c.input = TensorCoreInputType(w);
  c.trans_a = w.matmul.trans_a;
  c.trans_b = w.matmul.trans_b;
  c.a_aligned = OperandAAligned(w.matmul);
  c.b_aligned = OperandBAligned(w.matmul);
  return c;
}

absl::StatusOr<WmmaMatMulConfig> ResolveWmmaMatMul(const ir::Workload& w,
                                                   const KnobValues& values) {
  GTCO_RETURN_IF_ERROR(CheckTensorCoreMatMul(w, "cuda_mm_wmma/v1"));
  if (values.size() != kWmmaKnobCount) {
    return absl::InvalidArgumentError("cuda_mm_wmma/v1 takes 6 knob values");
  }
  GTCO_RETURN_IF_ERROR(CheckOneOf("bm", values[kWmmaBm], {16, 32, 64, 128, 256}));
  GTCO_RETURN_IF_ERROR(CheckOneOf("bn", values[kWmmaBn], {16, 32, 64, 128, 256}));
  GTCO_RETURN_IF_ERROR(CheckOneOf("bk", values[kWmmaBk], {16, 32, 64}));
  GTCO_RETURN_IF_ERROR(CheckOneOf("wm", values[kWmmaWm], {16, 32, 64}));
  GTCO_RETURN_IF_ERROR(CheckOneOf("wn", values[kWmmaWn], {16, 32, 64}));
  GTCO_RETURN_IF_ERROR(CheckRange("stages", values[kWmmaStages], 2, 6));
  const WmmaMatMulConfig c = WmmaConfigOf(w, values);
  if (c.wm > c.bm || c.wn > c.bn) {
    return absl::InvalidArgumentError(
        absl::StrCat("warp tile ", c.wm, "x", c.wn, " does not fit block tile ", c.bm, "x", c.bn));
  }
  if (c.Threads() > 1024) {
    return absl::InvalidArgumentError("cuda_mm_wmma/v1 block has more than 32 warps");
  }
  return c;
}

CudaPlan PlanWmmaMatMul(const ir::Workload& w, const WmmaMatMulConfig& c) {
  const ir::MatMulParams& p = w.matmul;
  CudaPlan plan;
  plan.grid_x = CeilDiv(p.n, c.bn);
  plan.grid_y = CeilDiv(p.m, c.bm);
  plan.grid_z = p.batch;
  plan.block_x = static_cast<int>(c.Threads());
  plan.dynamic_shared_bytes = c.SharedBytes();
  const int64_t frag_m = std::max<int64_t>(1, c.wm / 16), frag_n = std::max<int64_t>(1, c.wn / 16);
  // Accumulators: 8 f32 per 16x16 fragment. Operands: 8 (f16) or 4 (bf16) 32-bit registers per
  // A or B fragment, all of one k step live at once.
  const int64_t operand_regs = c.input == ir::DType::kBF16 ? 4 : 8;
  // Large warp tiles also keep more addresses live (measured with ptxas: about 1/8 more).
  const int64_t accumulators = frag_m * frag_n * 8;
  const int64_t registers =
      accumulators + accumulators / 8 + (frag_m + frag_n) * operand_regs + kOverheadRegisters;
  plan.est_registers = static_cast<int>(RoundUp(registers, 8));
  plan.tile_m = c.bm;
  plan.tile_n = c.bn;
  plan.tile_k = c.bk;
  plan.stages = static_cast<int>(c.stages);
  plan.vector_width = c.a_aligned && c.b_aligned ? 8 : 1;
  plan.tensor_core = true;
  return plan;
}

// ---- wgmma ----

WgmmaMatMulConfig WgmmaConfigOf(const ir::Workload& w, const KnobValues& values) {
  WgmmaMatMulConfig c;
  c.bm = values[kWgmmaBm];
  c.bn = values[kWgmmaBn];
  c.warpgroups = values[kWgmmaWarpgroups];
  c.stages = values[kWgmmaStages];
  c.input = TensorCoreInputType(w);
  c.trans_a = w.matmul.trans_a;
  c.trans_b = w.matmul.trans_b;
  c.a_aligned = OperandAAligned(w.matmul);
  c.b_aligned = OperandBAligned(w.matmul);
  return c;
}

absl::StatusOr<WgmmaMatMulConfig> ResolveWgmmaMatMul(const ir::Workload& w,
                                                     const KnobValues& values) {
  GTCO_RETURN_IF_ERROR(CheckTensorCoreMatMul(w, "cuda_mm_wgmma/v1"));
  if (values.size() != kWgmmaKnobCount) {
    return absl::InvalidArgumentError("cuda_mm_wgmma/v1 takes 5 knob values");
  }
  GTCO_RETURN_IF_ERROR(CheckOneOf("bm", values[kWgmmaBm], {64, 128, 192, 256}));
  GTCO_RETURN_IF_ERROR(CheckOneOf("bn", values[kWgmmaBn], {64, 128, 192, 256}));
  GTCO_RETURN_IF_ERROR(CheckOneOf("bk", values[kWgmmaBk], {WgmmaMatMulConfig::kBk}));
  GTCO_RETURN_IF_ERROR(CheckOneOf("wg", values[kWgmmaWarpgroups], {1, 2}));
  GTCO_RETURN_IF_ERROR(CheckRange("stages", values[kWgmmaStages], 3, 8));
  const WgmmaMatMulConfig c = WgmmaConfigOf(w, values);
  if (c.MTilesPerWarpgroup() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("block tile bm ", c.bm, " does not split into ",
                                                   c.warpgroups, " warpgroups of m64 tiles"));
  }
  return c;
}

CudaPlan PlanWgmmaMatMul(const ir::Workload& w, const WgmmaMatMulConfig& c) {
  const ir::MatMulParams& p = w.matmul;
  CudaPlan plan;
  plan.grid_x = CeilDiv(p.n, c.bn);
  plan.grid_y = CeilDiv(p.m, c.bm);
  plan.grid_z = p.batch;
  plan.block_x = static_cast<int>(c.Threads());
  plan.dynamic_shared_bytes = c.SharedBytes();
  plan.arch = "sm_90a";
  // Accumulators: bn / 2 f32 per m64 tile and thread; operands stay in shared memory.
  const int64_t m_tiles = std::max<int64_t>(1, c.MTilesPerWarpgroup());
  plan.est_registers = static_cast<int>(RoundUp(m_tiles * c.bn / 2 + kOverheadRegisters, 8));
  plan.tile_m = c.bm;
  plan.tile_n = c.bn;
  plan.tile_k = WgmmaMatMulConfig::kBk;
  plan.stages = static_cast<int>(c.stages);
  plan.vector_width = c.a_aligned && c.b_aligned ? 8 : 1;
  plan.tensor_core = true;
  return plan;
}

}  // namespace gtco::kernels
