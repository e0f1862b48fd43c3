// CUDA C building blocks shared by the matmul generators (matmul_{simt,tf32,mma}_gen.cc): the
// kernel preamble (shape constants, block origin, per-batch operand pointers), cp.async helpers,
// the copy of one operand tile into shared memory in its stored layout, and the output store
// with the fused epilogue.
//
// Names the emitted code defines for the kernel body: kM, kN, kK (constexpr int), gtco_index
// (int, or long long when a matrix has 2^31 elements or more), gtco_batch, gtco_block_m,
// gtco_block_n, gtco_a, gtco_b (this batch's A and B), and the shared-memory array gtco_smem.
// The kernel assumes 16-byte aligned base pointers (as cudaMalloc returns).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/kernels/family.h"

namespace gtco::kernels::mm {

/// The one set of copy helpers every CUDA matmul kernel (SIMT, mma.sync, wmma, wgmma) uses:
/// gtco_cp_async{4,8,16}(smem address, global pointer, source bytes; the rest of the chunk is
/// zero-filled, and 0 bytes reads nothing), gtco_cp_async_commit(), gtco_cp_async_wait<N>(), and
/// the aligned vector structs gtco_u4, gtco_f4, gtco_f2.
const std::string& AsyncCopyHelpers();

/// Two float expressions packed as one 32-bit word of 16-bit `dtype` values (lo first).
std::string PackHalf2(ir::DType dtype, const std::string& lo, const std::string& hi);

/// The kernel's parameter list without parentheses ("const float* __restrict__ in0, ...,
/// float* __restrict__ out"), as KernelSignature() writes it.
std::string KernelParams(const ir::Workload& w);
/// The matching argument list ("in0, in1, ..., out").
std::string KernelArgs(const ir::Workload& w);

/// KernelSignature() with `__launch_bounds__(threads, 1)`: stating a minimum of one resident block
/// keeps NVRTC's ptxas from trading small spills for occupancy (the register cap stays
/// min(255, registers per block / threads)). `cluster_x` > 1 compiles in a thread-block cluster of
/// that many blocks along x (`__cluster_dims__`, sm_90), so a plain launch of the grid forms them.
std::string MatMulKernelSignature(const ir::Workload& w, const std::string& entry, int threads,
                                  int64_t cluster_x = 1);

/// An operand that the kernel gathers element by element instead of reading it as a stored
/// row-major matrix: the patch matrix of an implicit-GEMM convolution, whose elements are pixels of
/// the image (or zeros in the padding). `emit(row, col)` returns statements that, for int
/// expressions `row` and `col` of the operand in its stored orientation (B: row k, column n),
/// declare `const bool gtco_ok` (false outside the matrix and in padding: the element reads as
/// zero) and `const float* gtco_src` (the element's address; a valid address even when !gtco_ok, so
/// that a load or cp.async never leaves the tensor). A gathered operand is copied one element per
/// chunk (vw 1), in f32.
struct OperandGather {
  std::function<std::string(const std::string& row, const std::string& col)> emit;
  bool active() const { return static_cast<bool>(emit); }
};

/// How a matmul kernel finds its operands. Defaults (empty fields) read the workload's A and B as
/// stored matrices, per batch as MatMulParams::a_batched and b_batched say. A convolution's
/// implicit GEMM overrides the batch pointers (batch = image * groups + group) and gathers B.
struct MatMulOperands {
  std::string a_pointer;  ///< expression of gtco_batch, in0, in1: this batch's A; empty: default
  std::string b_pointer;  ///< likewise for B (with a gather: what gtco_b means to the gather)
  OperandGather b_gather;  ///< inactive: B is the stored [K, N] (or [N, K]) matrix at gtco_b
};

/// Opening statements of a matmul kernel body for block tiles of bm x bn (see the names above):
/// blockIdx.x walks N tiles (`split` consecutive blocks, one cluster, per N tile when K is split),
/// blockIdx.y M tiles, blockIdx.z the batch. gtco_a and gtco_b come from `operands` where it
/// overrides them.
std::string EmitMatMulPreamble(const ir::Workload& w, int64_t bm, int64_t bn,
                               const MatMulOperands& operands = {}, int64_t split = 1);

/// A __device__ function `gtco_store<count>(<kernel params>, int gtco_batch, int i, int j,
/// float v0, ..., float v<count-1>)` that applies the epilogue to the outputs (i, j + e) of the
/// batch (e < count; j a multiple of count) and stores those inside M x N, with one vector store
/// when N is a multiple of `count`. count is 1, 2 or 4. INVALID_ARGUMENT for a bad epilogue.
absl::StatusOr<std::string> EmitStoreFunction(const ir::Workload& w, int count);
/// A call of gtco_store<count> for row `i`, column `j` and the value expressions `values`.
std::string EmitStoreCall(const ir::Workload& w, const std::string& i, const std::string& j,
                          const std::vector<std::string>& values);

/// How `threads` threads split a rows x cols tile into chunks of `vw` consecutive elements of a
/// row: chunk id = threadIdx.x + it * threads, row-major. All extents are powers of two, so each
/// thread's chunks lie at compile-time offsets from its first one, (gtco_tr, gtco_tc).
struct TileChunks {
  int64_t rows = 0, cols = 0, vw = 1, threads = 32;

  int64_t ChunksPerRow() const { return cols / vw; }
  int64_t Chunks() const { return rows * ChunksPerRow(); }
  int64_t Iterations() const { return (Chunks() + threads - 1) / threads; }
  /// True when there are fewer chunks than threads: only threadIdx.x < Chunks() copies.
  bool Guarded() const { return Chunks() < threads; }
  /// Declarations of `const int gtco_tr, gtco_tc`: row and first column of the first chunk.
  std::string DeclareThreadOrigin() const;
  /// Row and column offsets of chunk `it` from the first one.
  int64_t RowOffset(int64_t it) const;
  int64_t ColOffset(int64_t it) const;
};

/// One operand tile copied from global to shared memory in the operand's stored layout: tile
/// element (r, c) for r < rows, c < cols goes to shared row r, column c (row stride `stride`
/// elements) from stored element (row0 + r, col0 + c) of a global_rows x global_cols row-major
/// matrix, zero outside it. global_cols % vw == 0.
struct OperandTileCopy {
  std::string dst_bytes;   ///< expression: byte offset of the tile in gtco_smem
  std::string src;         ///< expression: global pointer to the matrix (this batch)
  std::string row0, col0;  ///< expressions: the tile's origin in the stored matrix
  int64_t rows = 0, cols = 0;
  int64_t stride = 0;
  int64_t global_rows = 0, global_cols = 0;
  int64_t vw = 1;
  ir::DType dtype = ir::DType::kF32;
  int64_t threads = 32;
  /// cp.async when the chunk is 4, 8 or 16 bytes (else plain loads and stores, complete when
  /// the statements finish).
  bool async = true;
  /// When active, elements come from the gather (vw 1, f32) instead of `src`; the gather checks
  /// the bounds itself.
  const OperandGather* gather = nullptr;
};
/// The statements of `copy` as one block. Needs `gtco_smem_base`, the shared address of
/// gtco_smem (see EmitSharedBase()).
std::string EmitOperandTileCopy(const OperandTileCopy& copy);
/// `const unsigned int gtco_smem_base = gtco_smem_addr(gtco_smem);`
std::string EmitSharedBase();

}  // namespace gtco::kernels::mm
