// Internal to the low-precision matmul sketches: the plan of one (workload, decisions) pair and
// the loop nest built from it (B panels packed into 32-bit words of 2 bf16 / 4 int8 values, a
// register tile of mr rows x nr vectors (16 lanes; 8 for the AVX2 fallback) updated by
// dot_bf16x2 / dot_u8s8x4 / dot_u8s8x4_wide).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/ir/loop_ir.h"
#include "common/ir/workload.h"
#include "common/kernels/family.h"
#include "common/kernels/prepack.h"
#include "common/schedule/trace.h"

namespace gtco::kernels::internal {

/// Lanes of the 512-bit accumulator vectors (16 x f32 or 16 x i32): the AVX-512 mappings'.
inline constexpr int64_t kLowpLanes = 16;
/// Lanes of the AVX2 integer fallback's 256-bit accumulators.
inline constexpr int64_t kAvx2Lanes = 8;
/// The pack_b value of an AMX schedule reading B pre-packed (the blocked matmul's
/// kPackBPrepacked: ReadsPrepackedInput and WithPackB treat both alike).
inline constexpr int64_t kPackBPrepackedLowp = 2;
/// Rows of an AMX tile (and K words in one 64-byte tile row).
inline constexpr int64_t kAmxTileRows = 16;
/// Largest packed B panel (a stack allocation of each task).
inline constexpr int64_t kMaxPanelBytes = int64_t{2} << 20;

/// Decisions of the low-precision sketches, in knob order.
struct LowpDecisions {
  int64_t mr = 1, nr = 1, nc = 16, mc = 16, par = 0, unroll_k = 1;
  /// The mapping's, not a knob: accumulator lanes (kLowpLanes, or kAvx2Lanes with wide dots).
  int64_t lanes = kLowpLanes;
  /// Integer dot products as widened multiplies ("dot_u8s8x4_wide"), never vpdpbusd.
  bool wide_dot = false;
  /// AMX tiles: mr A tiles of 16 rows by nr B tiles of 16 columns per TileMatMul.
  bool amx = false;
  /// 1 packs B's panel in each task; 2 (kPackBPrepacked) reads B pre-packed (PrepackLowpB's
  /// layout: the whole of B in 16-column tiles, columns padded to the block; AMX, and the
  /// 16-lane vector kernels with bf16 or s8 B).
  int64_t pack_b = 1;
  /// AMX only: K elements per K block (a divisor of K, a multiple of one tile row of K), or 0
  /// (or K) for the whole K in one TileMatMul per block.
  int64_t kc = 0;
  /// AMX with B pre-packed only: each tile block prefetches its share of the B chunk that the
  /// task's next pass (its next K block, or the next panel) reads, so the weights stream from
  /// memory while the tiles compute on cached ones.
  bool prefetch = false;
};

/// Every derived size of one (workload, decisions) pair.
struct LowpPlan {
  ir::MatMulParams p;
  bool bf16 = false;           ///< bf16 x bf16 (else u8|i8 x u8|i8)
  int64_t group = 4;           ///< K elements per 32-bit word: 2 (bf16) or 4 (int8)
  int64_t full_groups = 0;     ///< K / group
  bool k_tail = false;         ///< K % group != 0: one zero-padded group at the end
  int64_t k_groups = 0;        ///< full_groups + k_tail
  int64_t lanes = kLowpLanes;  ///< accumulator vector lanes
  bool wide_dot = false;       ///< dot_u8s8x4_wide (AVX2) instead of dot_u8s8x4 (VNNI)
  bool amx = false;            ///< TileMatMul blocks (AMX) instead of vector dot products
  bool prepacked_b = false;    ///< B arrives as PrepackLowpB lays it out (pack_b = 2)
  int64_t mr = 1, nr = 1;
  int64_t tile_cols = 16;   ///< columns of one packed column tile (its words contiguous per group)
  int64_t block_cols = 16;  ///< columns one register / tile block updates (tile_cols, or 16 * nr)
  int64_t tile_rows = 1;    ///< rows of one row tile (mr, or 16 * mr with AMX)
  int64_t panel_cols = 16;  ///< columns per N block (multiple of tile_cols)
  int64_t n_blocks = 1, row_block = 1, m_blocks = 1;
  int64_t par = 0, unroll_k = 1;
  /// K groups per K block and K blocks (AMX; k_groups and 1 without K blocking). With K blocks
  /// each task sweeps its row tiles by column blocks once per K block, the partial sums in a
  /// scratch C (ScratchCElements).
  int64_t k_block_groups = 0, k_blocks = 1;
  bool prefetch = false;  ///< LowpDecisions::prefetch
  /// M % tile_rows != 0: the last row tile reads a clamped row (with AMX: each A tile of the
  /// last row tile starts at min(its row, M - 16), recomputing rows of the tile before it)
  bool clamp_rows = false;
  bool pad_cols = false;  ///< n_blocks * panel_cols > N: stores and packing are guarded
  // Integer matmuls run on u8 A' = A + sa and s8 B' = B - sb (sa = 128 for i8 A, sb = 128 for
  // u8 B; both 0 with AMX, whose tdpb[su][su]d take either signedness); then out = dot(A', B') -
  // za_eff * colsum(B') - zb_eff * rowsum(A') + K*za_eff*zb_eff with za_eff = sa + a_zero_point and
  // zb_eff = b_zero_point - sb. With za_input, A's zero point is read at run time (anchor input 2)
  // and za_eff holds only the shift sa; the kernel adds the zero point once per task.
  bool a_signed = false, b_unsigned = false;
  bool za_input = false;
  int64_t za_eff = 0, zb_eff = 0;
  ir::DType out_dtype = ir::DType::kF32;
};

/// OK when `w` is a bf16 or 8-bit integer matmul these kernels compute (dtypes, zero points,
/// epilogue and shapes consistent, A not transposed); INVALID_ARGUMENT saying why not.
absl::Status CheckLowpWorkload(const ir::Workload& w);

/// Empty when `w` (a valid low-precision matmul) has a shape the AMX tiles take (K a multiple
/// of 32 bf16 / 64 int8 values, M >= 16); otherwise why not.
std::string AmxShapeMismatch(const ir::Workload& w);

/// Checks shapes and decisions (INVALID_ARGUMENT naming the knob) and derives the plan.
absl::StatusOr<LowpPlan> MakeLowpPlan(const ir::Workload& w, const LowpDecisions& decisions);

/// The AMX tile instruction of `plan` ("tdpbf16ps", or "tdpb" + [su] for A + [su] for B + "d").
std::string AmxInstruction(const LowpPlan& plan);

/// Columns of a pre-packed B: N rounded up to whole blocks of block_cols.
int64_t PrepackedColumns(const LowpPlan& plan);
/// Rows of a pre-packed B: K rounded up to whole 32-bit words (the vector kernels take any K).
inline int64_t PrepackedRows(const LowpPlan& plan) { return plan.k_groups * plan.group; }

/// For a trace reading B pre-packed (pack_b = 2: AMX, AVX-512 "/v2"): B (values in w's layout
/// of input 1) as the kernel reads it, as values of B's dtype: word (column tile j, K group g,
/// column c) of the whole-B panel at element ((j * k_groups + g) * 16 + c) * group, zero past N
/// and K; its shape [K rounded up to whole words, PrepackedColumns]. nullopt for other traces;
/// INVALID_ARGUMENT when `t` does not replay for `w` or `b` has the wrong size.
absl::StatusOr<std::optional<PrepackedOperand>> PrepackLowpB(const ir::Workload& w,
                                                             const schedule::Trace& t,
                                                             const std::vector<float>& b);

/// Bytes of the packed B panel of `plan`.
int64_t PanelBytes(const LowpPlan& plan);
/// Bytes of the part of the B panel one K block reads (PanelBytes without K blocks).
int64_t PanelBlockBytes(const LowpPlan& plan);
/// Elements of a K-blocked task's scratch C: its rows (all of M, or one M block with par = 2,
/// rounded up to the row tile) by the panel's columns; 0 without K blocks.
int64_t ScratchCElements(const LowpPlan& plan);
/// Largest scratch C of a K-blocked task (a stack allocation).
inline constexpr int64_t kMaxScratchCBytes = int64_t{1} << 20;

/// The kernel for (w, plan): params are the workload's inputs then the output, typed.
absl::StatusOr<ir::LoweredFunc> LowerLowpMatMul(const ir::Workload& w, const LowpPlan& plan,
                                                const std::string& func_name);

}  // namespace gtco::kernels::internal
