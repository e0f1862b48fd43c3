// Tensor Core matmul configurations shared by the "wmma" and "wgmma" sketches (their plans and
// pruning) and their CUDA C generators (common/codegen/cuda/matmul_w*mma_gen.cc), so that the
// plan a trace is pruned by is the plan its kernel is generated from.
//
// Both kernels compute out[b, i, j] = epilogue(sum_k A[ab, i, k] * B[bb, k, j]) with f16 or bf16
// inputs and f32 accumulation, one block per (BN-column tile, BM-row tile, batch) = grid (x, y, z).
// Operand tiles are staged through shared memory in the orientation they have in global memory
// (trans_a / trans_b choose the fragment layout or the descriptor's transpose bit), 16 bytes per
// cp.async when the operand's contiguous dimension is a multiple of 8 elements ("aligned"), one
// element at a time otherwise.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/kernels/family.h"
#include "common/schedule/cuda_sketch.h"
#include "common/schedule/sketch.h"

namespace gtco::kernels {

/// The 16-bit input type (kF16 or kBF16) of a matmul that a Tensor Core sketch computes, or
/// kF32 when `w` is not one: both inputs f16 or both bf16, an f32, f16 or bf16 output, and no
/// integer zero points.
ir::DType TensorCoreInputType(const ir::Workload& w);
/// Empty when TensorCoreInputType(w) is f16 or bf16, else why not (for mapping verdicts).
std::string TensorCoreDTypeProblem(const ir::Workload& w);
/// True for a tile pointlessly larger than the problem: not the smallest candidate, and at least
/// one whole `granule` of it lies past `extent` rounded up to `granule`.
bool TileExceedsShape(int64_t tile, int64_t smallest, int64_t extent, int64_t granule);
/// True when the contiguous (last) dimension of operand A (B) is a multiple of 8 elements, so
/// 16-byte copies of the operand stay inside rows and aligned.
bool OperandAAligned(const ir::MatMulParams& p);
bool OperandBAligned(const ir::MatMulParams& p);

/// "cuda_mm_wmma/v1" knobs, resolved: block tile bm x bn (k step bk), warp tile wm x wn, stages.
/// Each warp computes (wm/16) x (wn/16) wmma m16n16k16 fragments.
struct WmmaMatMulConfig {
  int64_t bm = 128, bn = 128, bk = 32, wm = 64, wn = 32, stages = 3;
  ir::DType input = ir::DType::kF16;
  bool trans_a = false, trans_b = false;
  bool a_aligned = true, b_aligned = true;

  /// Elements of padding added to every shared-memory row (16 bytes: breaks bank conflicts of
  /// wmma.load while keeping 32-byte fragment alignment).
  static constexpr int64_t kPad = 8;
  /// Floats of padding per row of the f32 output tile staged for the epilogue.
  static constexpr int64_t kOutPad = 4;

  int64_t WarpsM() const { return bm / wm > 0 ? bm / wm : 1; }
  int64_t WarpsN() const { return bn / wn > 0 ? bn / wn : 1; }
  int64_t Threads() const { return 32 * WarpsM() * WarpsN(); }
  /// Shared-memory rows and row length (elements, with padding) of one stage of A / B.
  int64_t ASmemRows() const { return trans_a ? bk : bm; }
  int64_t ASmemStride() const { return (trans_a ? bm : bk) + kPad; }
  int64_t BSmemRows() const { return trans_b ? bn : bk; }
  int64_t BSmemStride() const { return (trans_b ? bk : bn) + kPad; }
  int64_t AStageBytes() const { return ASmemRows() * ASmemStride() * 2; }
  int64_t BStageBytes() const { return BSmemRows() * BSmemStride() * 2; }
  int64_t PipelineBytes() const { return stages * (AStageBytes() + BStageBytes()); }
  /// The bm x bn f32 tile the epilogue reads back (reuses the pipeline's memory).
  int64_t OutputTileBytes() const { return bm * (bn + kOutPad) * 4; }
  int64_t SharedBytes() const {
    return PipelineBytes() > OutputTileBytes() ? PipelineBytes() : OutputTileBytes();
  }
};

/// Knob order of "cuda_mm_wmma/v1".
enum WmmaKnob { kWmmaBm, kWmmaBn, kWmmaBk, kWmmaWm, kWmmaWn, kWmmaStages, kWmmaKnobCount };

/// The configuration of (w, values); INVALID_ARGUMENT when `w` is not an f16/bf16 matmul or a
/// value is outside the sketch's structural range (powers of two, warp tile inside the block).
absl::StatusOr<WmmaMatMulConfig> ResolveWmmaMatMul(const ir::Workload& w, const KnobValues& values);
/// The configuration without range checks (for plans of arbitrary candidate combinations).
WmmaMatMulConfig WmmaConfigOf(const ir::Workload& w, const KnobValues& values);
/// Launch geometry and resources of `c` for `w`.
CudaPlan PlanWmmaMatMul(const ir::Workload& w, const WmmaMatMulConfig& c);

/// "cuda_mm_wgmma/v1" knobs, resolved: block tile bm x bn with bk = 64, `warpgroups` consumer
/// warpgroups (128 threads each) splitting the bm rows, `stages` shared-memory stages. Each
/// warpgroup issues (bm / 64 / warpgroups) wgmma.m64n<bn>k16 per 16-wide k step.
struct WgmmaMatMulConfig {
  int64_t bm = 128, bn = 128, warpgroups = 2, stages = 4;
  ir::DType input = ir::DType::kF16;
  bool trans_a = false, trans_b = false;
  bool a_aligned = true, b_aligned = true;

  /// K extent of a stage: one 128-byte swizzle row of 16-bit elements.
  static constexpr int64_t kBk = 64;
  /// Bytes of slack requested so that the kernel can align its tiles to 1024 bytes (the 128-byte
  /// swizzle pattern repeats every 1024 bytes and descriptors assume that phase).
  static constexpr int64_t kAlignSlack = 1024;

  int64_t Threads() const { return 128 * warpgroups; }
  /// m64 wgmma tiles per warpgroup (0 when bm / 64 is not a multiple of warpgroups).
  int64_t MTilesPerWarpgroup() const {
    return (bm / 64) % warpgroups == 0 ? bm / 64 / warpgroups : 0;
  }
  int64_t AStageBytes() const { return bm * kBk * 2; }
  int64_t BStageBytes() const { return bn * kBk * 2; }
  int64_t SharedBytes() const { return stages * (AStageBytes() + BStageBytes()) + kAlignSlack; }
};

/// Knob order of "cuda_mm_wgmma/v1".
enum WgmmaKnob { kWgmmaBm, kWgmmaBn, kWgmmaBk, kWgmmaWarpgroups, kWgmmaStages, kWgmmaKnobCount };

/// As ResolveWmmaMatMul, for "cuda_mm_wgmma/v1" (bm 64..256 step 64, bn 64..256 step 64, bk 64,
/// 1 or 2 warpgroups dividing bm / 64, 3..8 stages).
absl::StatusOr<WgmmaMatMulConfig> ResolveWgmmaMatMul(const ir::Workload& w,
                                                     const KnobValues& values);
WgmmaMatMulConfig WgmmaConfigOf(const ir::Workload& w, const KnobValues& values);
CudaPlan PlanWgmmaMatMul(const ir::Workload& w, const WgmmaMatMulConfig& c);

}  // namespace gtco::kernels
