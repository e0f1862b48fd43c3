// The kernel skeleton shared by the mma.sync matmul generators (matmul_tf32_gen.cc,
// matmul_mma_gen.cc): block and warp tiling, the cp.async multistage pipeline over K, and the
// epilogue stores of m16n8 accumulator tiles. The generators supply the instruction-specific
// parts: device helpers, per-lane setup and the consumption of one shared-memory stage.
//
// Names the skeleton defines for those parts (beyond matmul_kernel_util.h's): gtco_sa, gtco_sb
// (typed pointers to stage 0 of the A and B tiles), kAStage, kBStage (elements per stage),
// gtco_smem_base (the shared-memory address of gtco_smem; the B tiles follow the A tiles),
// gtco_lane, gtco_warp_m, gtco_warp_n (the warp tile's origin inside the block tile), and
// gtco_acc[MI][NI][4], the m16n8 accumulators (MI = wm / 16, NI = wn / 8), in the mma.sync
// C-fragment layout: element q of tile (mi, ni) is row mi*16 + lane/4 + (q/2)*8, column
// ni*8 + (lane%4)*2 + q%2 of the warp tile.
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/kernels/cuda/matmul_common/cuda_matmul_common.h"
#include "common/kernels/cuda/matmul_common/matmul_kernel_util.h"
#include "common/kernels/family.h"

namespace gtco::kernels::mm {

/// The instruction-specific parts of a tensor-core matmul kernel.
struct TensorCoreKernelParts {
  std::string helpers;  ///< device functions placed before the kernel
  std::string setup;    ///< statements run once before the K loop (per-lane offsets)
  /// Statements consuming the shared-memory stage whose index is the int expression `stage`:
  /// one bk slice of A and B, accumulated into gtco_acc.
  std::function<std::string(const std::string& stage)> consume_stage;
};

/// INVALID_ARGUMENT unless `tiling` is one the skeleton supports: block tiles of 32..256 split
/// into whole warp tiles (wm a multiple of 16, wn of `wn_multiple`), bk a multiple of `mma_k` up
/// to 64, 2..4 stages, at most 1024 threads.
absl::Status CheckTensorCoreTiling(const cuda_matmul::TensorCoreTiling& tiling, int64_t mma_k,
                                   int64_t wn_multiple);

/// The complete kernel source (Prelude() first) named `entry`, its operands located by
/// `operands` (a gathered B needs tiling.vw_b 1 and [K, N] storage). INVALID_ARGUMENT for a bad
/// epilogue or a gather the tiling cannot copy.
absl::StatusOr<std::string> EmitTensorCoreMatMul(const ir::Workload& w,
                                                 const cuda_matmul::TensorCoreTiling& tiling,
                                                 const std::string& entry,
                                                 const TensorCoreKernelParts& parts,
                                                 const MatMulOperands& operands = {});

}  // namespace gtco::kernels::mm
