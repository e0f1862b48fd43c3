// CUDA C building blocks of the Tensor Core matmul generators (wmma, wgmma): global -> shared
// operand tile copies (cp.async with zero fill, or element copies for unaligned operands), and the
// output stores that apply the fused epilogue per element with bounds checks.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/kernels/family.h"

namespace gtco::kernels {

/// Shared-memory arrangement of an operand tile.
enum class TileLayout {
  /// Row r, column c at element r * (cols + pad) + c.
  kPadded,
  /// 128-byte swizzle of wgmma (and TMA) operands: the tile is split into 64-element column
  /// blocks of rows x 128 bytes each (1024-byte-aligned 8-row atoms); the 16-byte chunk j of row r
  /// of a block lies at chunk position j ^ (r % 8).
  kSwizzle128,
};

/// One operand tile: rows [r0, r0 + rows) x columns [c0, c0 + cols) of a row-major 16-bit matrix
/// of global_rows x global_cols, copied once per k step.
struct TileCopy {
  std::string name;  ///< the emitted device function
  int64_t rows = 0, cols = 0;
  int64_t global_rows = 0, global_cols = 0;
  int threads = 0;  ///< threads of the block sharing the copy (tid in [0, threads))
  TileLayout layout = TileLayout::kPadded;
  int64_t pad = 8;  ///< kPadded: elements appended to each shared-memory row
};

/// `__device__ void <name>(unsigned char* dst, const unsigned short* src, int r0, int c0, int tid)`
/// (needs mm::AsyncCopyHelpers())
/// copying the tile into shared memory at dst (layout as in `copy`), zero-filling elements outside
/// the matrix. Uses 16-byte copies when global_cols is a multiple of 8 (cols must then be one),
/// 2-byte element copies otherwise.
std::string EmitTileCopy(const TileCopy& copy);

/// How a kernel hands accumulators to the output stores.
enum class OutputStore {
  /// `gtco_store_pair(row, col, v0, v1)`: elements (row, col) and (row, col + 1), col even.
  kPairs,
  /// `gtco_store_run(row, col, vals)`: 16 bytes' worth of consecutive elements (4 for f32
  /// outputs, 8 for 16-bit ones) read from `const float* vals`, col a multiple of that count.
  kRuns,
};

/// Kernel-scope lambdas (emit after the constants kM, kN): `gtco_apply(acc, row, col)` returning
/// the fused epilogue's result at output element (row, col) with row = batch * M + i, and the
/// store lambda of `store`. Stores skip columns at or past N; rows must be checked by the caller.
absl::StatusOr<std::string> EmitOutputLambdas(const ir::Workload& w, OutputStore store);

/// Statements defining `const int tile_row, tile_col`: the (M, N) tile of this block in a grid
/// of grid_x column tiles by grid_y row tiles (blockIdx.x, blockIdx.y), rasterized in groups of
/// 8 row tiles so that blocks running together share operand tiles in L2.
std::string EmitTileRasterization(int64_t grid_x, int64_t grid_y);

/// Elements per gtco_store_run call for `w`'s output type.
int StoreRunLength(const ir::Workload& w);

/// `"{%first, %first+1, ..., %first+count-1}"` for an inline-asm vector operand.
std::string AsmRegisterList(int first, int count);
/// `"<constraint>(name[0]), ..., <constraint>(name[count-1])"`.
std::string AsmOperands(const std::string& constraint, const std::string& name, int count);

/// `text` with every "@KEY@" replaced by its value.
std::string FillTemplate(const std::string& text, const std::map<std::string, std::string>& values);

}  // namespace gtco::kernels
