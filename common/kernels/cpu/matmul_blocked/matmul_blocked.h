// Internal to the kernel families: the register-blocked fp32 matmul sketch family shared by the
// FMA mappings ("mm_avx512_fma/v1", "mm_avx2_fma/v1"): its per-mapping parameters, knobs and
// pruning rules, the plan derived from (matmul view, decisions), and the lowering of a plan to
// loop IR over operands that a family supplies (cpu/conv reads image patches: implicit GEMM).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/loop_ir.h"
#include "common/ir/workload.h"
#include "common/kernels/family.h"
#include "common/kernels/prepack.h"
#include "common/schedule/epilogue.h"
#include "common/schedule/sketch.h"

namespace gtco::kernels::internal {

/// What distinguishes one FMA mapping of the blocked sketch from another.
struct FmaMappingSpec {
  const char* sketch_name;            ///< versioned trace name, e.g. "mm_avx512_fma/v1"
  const char* mapping;                ///< mapping name, e.g. "avx512_fma"
  std::vector<std::string> features;  ///< CPU features it needs (cpuinfo spellings)
  int64_t vw;                         ///< fp32 lanes per vector register
  int64_t registers;                  ///< vector registers of the ISA
  std::vector<int64_t> mr_choices;    ///< register-tile rows (broadcast A values)
  std::vector<int64_t> nr_choices;    ///< register-tile width in vectors (B vectors)
};

/// The two FMA specs (ISA parameters) the matmul mappings use; a family reusing the blocked
/// lowering takes them and sets its own sketch name.
FmaMappingSpec Avx512FmaSpec();
FmaMappingSpec Avx2FmaSpec();
/// `spec`'s registers, lanes and tiles under another sketch's and mapping's names (cpu/conv).
FmaMappingSpec Renamed(FmaMappingSpec spec, const char* sketch_name, const char* mapping);

/// The verdict of an FMA mapping of `spec` for (w, hw): its CPU features and f32 operands, else
/// why not; `what` describes the kernel in the reason ("FMA micro-kernels", ...).
MappingVerdict FmaVerdict(const char* mapping, const FmaMappingSpec& spec, const ir::Workload& w,
                          const target::HardwareInfo& hw, const std::string& what);

/// Knob order of the blocked sketch (trace order).
enum BlockedKnob { kMr, kNr, kKc, kMc, kNc, kPar, kUnrollK, kPackA, kPackB, kNumBlockedKnobs };

/// The pack_b value of a B stored pre-packed (PrepackB): a constant weight read from the
/// kernel's B input in the panels the micro-kernel streams, with no packing at run time. The
/// matmul sketch never searches it (its Knobs offer 0 and 1; the exporter switches a tuned
/// pack_b=1 to it); the channel-vectorized conv searches only it, and a worker measuring such a
/// trace packs its random B the same way (PackInputsForTrace).
inline constexpr int64_t kPackBPrepacked = 2;

/// The pack_a value of an A staged by the family (GemmOperands::staged_a): per task and K block
/// the family copies what A's rows read into a buffer (the channel-vectorized conv: a zero-padded
/// band of the image), which the micro-kernel reads in place. Only families with staged operands
/// offer it.
inline constexpr int64_t kPackAStaged = 2;

/// Every size derived from one (workload, decisions) pair. Row blocks are multiples of mr and
/// column blocks multiples of tc unless a single block covers the whole dimension, so the row
/// tail (M % mr rows) lives in the last M block and the column tail (N % tc) in the last N block.
struct BlockedPlan {
  ir::MatMulParams p;
  int64_t vw = 16, mr = 1, nr = 1, kc = 1, unroll_k = 1;
  bool parallel = false, pack_a = false, pack_b = false;
  bool prepacked_b = false;  ///< B arrives in PrepackB's layout (pack_b = kPackBPrepacked)
  bool staged_a = false;     ///< A is read from the family's staging (pack_a = kPackAStaged)
  int64_t tc = 16;           ///< columns of a full register tile (nr * vw)
  int64_t row_block = 1;     ///< rows per M block
  int64_t col_block = 16;    ///< columns per N block
  int64_t m_blocks = 1, n_blocks = 1, k_blocks = 1;
  int64_t row_tail = 0;       ///< M % mr: rows of the exact tail tile in the last M block
  int64_t col_tail = 0;       ///< N % tc: columns of the masked tail tile in the last N block
  int64_t col_tail_vecs = 0;  ///< vectors of the column tail tile (ceil(col_tail / vw))
};

/// The plan for (w, values); INVALID_ARGUMENT for inconsistent shapes or structurally invalid
/// decisions (mr, nr outside the register tile limits, a vw the sketch never uses, ...).
absl::StatusOr<BlockedPlan> MakeBlockedPlan(const ir::Workload& w, const KnobValues& values,
                                            int64_t vw);
/// Same for the matmul view `p` (positive sizes assumed checked).
absl::StatusOr<BlockedPlan> MakeBlockedPlan(const ir::MatMulParams& p, const KnobValues& values,
                                            int64_t vw);

/// Floats of B in the pre-packed layout of `plan`: K rows of every column tile, zero-padded to
/// whole tiles of tc columns.
int64_t PrepackedBElements(const BlockedPlan& plan);
/// B (row-major [K, N], not batched, not transposed) in the layout a plan with prepacked_b
/// reads: for each K block (kc rows, the last one shorter), for each column tile (tc columns,
/// zero past N), its [rows][tc] panel; the block of K block kb starts at kb * kc * padded N.
std::vector<float> PrepackB(const BlockedPlan& plan, const float* b);

/// The decision values of `t`, a blocked trace of `w` (one per BlockedKnob), else why not.
absl::StatusOr<KnobValues> BlockedTraceValues(const ir::Workload& w, const schedule::Trace& t);

/// The pre-packed B of `t` (a blocked trace with decision values `values`, `vw` lanes) for the
/// matmul view `view`, from B row-major [view.k, view.n]: `t` with pack_b=2 and B in PrepackB's
/// layout. The shared half of PrepackConstantB and PrepackChannelConvWeights (sizes checked by
/// the callers).
absl::StatusOr<PrepackedOperand> PrepackForView(const schedule::Trace& t, KnobValues values,
                                                const ir::MatMulParams& view, int64_t vw,
                                                const float* b);

/// The conv half of PrepackConstantB (cpu/conv): for a channel-vectorized conv trace
/// (conv_*_fma_channels/v1) the trace reading W pre-packed and W [K, C, R, S] in that layout (its
/// transpose [C*R*S, K] in PrepackB's panels, the rows of each K block tap-major when the trace
/// stages A); nullopt for other traces.
absl::StatusOr<std::optional<PrepackedOperand>> PrepackChannelConvWeights(
    const ir::Workload& w, const schedule::Trace& t, const std::vector<float>& weights);

/// The Winograd half of PrepackConstantB (cpu/conv): for a Winograd conv trace
/// (conv_*_fma_winograd/v1) the trace reading U pre-packed and U, W [K, C, 3, 3] transformed
/// (G g G^T per output and input channel), [16][C, K] in PrepackB's panels per position, back to
/// back; nullopt for other traces.
absl::StatusOr<std::optional<PrepackedOperand>> PrepackWinogradConvWeights(
    const ir::Workload& w, const schedule::Trace& t, const std::vector<float>& weights);

/// The register tile's row count that divides M where none of the spec's row counts above 4 does
/// (the largest such divisor of M above 4, at most the spec's widest); 0 when there is none or a
/// choice already divides M. It joins the mr knob's values.
int64_t DividingTileRows(const FmaMappingSpec& spec, int64_t m);

/// The value of `values` nearest to `target` (the first of equals).
int64_t NearestTo(const std::vector<int64_t>& values, int64_t target);

/// The blocked sketch's knobs and candidate values for the matmul view `p` on `hw`.
std::vector<Knob> BlockedKnobs(const FmaMappingSpec& spec, const ir::MatMulParams& p,
                               const target::HardwareInfo& hw);
/// The first resource rule rejecting `values` for the matmul view `p`, nullptr if none.
/// `a_block_floats` is what an M block of A holds in cache (negative: the mc x kc block; a
/// family staging A says its own size).
const char* BlockedPruneRule(const FmaMappingSpec& spec, const ir::MatMulParams& p,
                             const target::HardwareInfo& hw, const KnobValues& values,
                             int64_t a_block_floats = -1);

/// Where the lowering reads its operands: A[row, k] and B[k, col] of batch entry `b` of the
/// plan's matmul view (row < m, k < k, col < n). Each returns an f32 expression.
struct GemmOperands {
  std::function<ir::Expr(const ir::Expr& b, const ir::Expr& row, const ir::Expr& k)> a;
  std::function<ir::Expr(const ir::Expr& b, const ir::Expr& k, const ir::Expr& col)> b;
  /// Optional: the statement storing row `k` of B's columns [j0, j0 + width) of batch entry `b`
  /// at buffer[dest + c] for c < width, zero for columns past N when `zero_past_n`. Absent: one
  /// vectorized copy through `b`. The implicit-GEMM conv sets it: a patch row is contiguous
  /// within each output row, so it packs one vector range per output row instead of computing
  /// every element's (oh, ow) and gathering.
  using PackRow = std::function<ir::Stmt(const ir::Expr& b, const ir::Expr& k, const ir::Expr& j0,
                                         int64_t width, bool zero_past_n, const std::string& buffer,
                                         const ir::Expr& dest)>;
  PackRow pack_b_row;
  /// Optional, the same for A's column k: rows [j0, min(j0 + width, M)) of batch entry `b`
  /// stored at buffer[dest + r - j0] (zero_past_n false; rows past M are left alone). Present,
  /// pack_a packs a whole [kc][row_block] block a K row at a time, which the tiles read at a
  /// stride of row_block; absent, each tile's [kc][mr] panel one A load per element. The
  /// channel-vectorized conv sets it: its A is the transposed patch matrix, whose columns are
  /// the patch rows above.
  PackRow pack_a_column;
  /// Where result C[row, col] of batch entry `b` is stored, and the (row, col) the epilogue
  /// applies at.
  struct Place {
    ir::Expr index, epilogue_row, epilogue_col;
    std::string buffer = kOutputName;  ///< the buffer `index` indexes
  };
  /// Optional: the place of C[row, col]. Absent: the output is [batch, m, n] row-major and the
  /// epilogue runs at (b * m + row, col). The channel-vectorized conv sets it: its rows are
  /// pixels and its columns output channels of an NCHW output, a column a plane apart from the
  /// next (hence write_back_by_rows).
  std::function<Place(const ir::Expr& b, const ir::Expr& row, const ir::Expr& col)> out;
  /// The final write-back walks each column's rows in the vector lanes instead of each row's
  /// columns, for an `out` whose columns lie a plane apart and rows next to each other (the
  /// channel-vectorized conv's NCHW): a tile's column vectors scattered each lane to its own
  /// plane (ResNet-50's stem at 4x4 tiles: 1023 µs, 617 by rows).
  bool write_back_by_rows = false;
  /// Optional (required by pack_a = kPackAStaged): A staged per task and K block by the family
  /// and read in place. A K block's k run in `groups` equal groups of steps (k_extent / groups
  /// each); A[row, k_begin + g * steps + j] of the M block starting at row i_begin is at
  /// buffer[row_offset(i_begin, row) + group_offset(g) + step_offset(j)]: the micro-kernel walks
  /// the groups, each a plain K loop at a fixed stride. The channel-vectorized conv stages a
  /// zero-padded band of the image (the input rows the block's pixels read, every channel of the
  /// K block), its groups the kernel taps and its steps the block's channels: a patch element is
  /// then one offset from its pixel, so nothing is expanded R*S-fold as packed patch rows are.
  struct StagedA {
    int64_t floats = 0;  ///< the staging buffer's size
    int64_t groups = 1;
    /// Fills `buffer` for K rows [k_begin, k_begin + k_extent) of the rows of the M block
    /// starting at i_begin, batch entry b.
    std::function<ir::Stmt(const ir::Expr& b, const ir::Expr& k_begin, const ir::Expr& k_extent,
                           const ir::Expr& i_begin, const std::string& buffer)>
        fill;
    std::function<ir::Expr(const ir::Expr& i_begin, const ir::Expr& row)> row_offset;
    std::function<ir::Expr(const ir::Expr& group)> group_offset;
    std::function<ir::Expr(const ir::Expr& step)> step_offset;
    /// Optional (with batch_in_task): where batch entry b's staging starts, when `fill` stages
    /// every batch entry of the block at once.
    std::function<ir::Expr(const ir::Expr& b)> batch_offset;
  };
  std::optional<StagedA> staged_a;
  /// B pre-packed once per batch entry (pack_b = kPackBPrepacked), PrepackB's layout for each,
  /// back to back: entry b's panels start at b * K * (N rounded up to whole column tiles).
  bool prepacked_b_per_batch = false;
  /// Optional: each task is one (M block, N block) that runs every batch entry, K blocks
  /// outermost: per K block, staged_a->fill once (its b is 0; it stages every batch entry, at
  /// batch_offset(b)), then each batch entry's tiles. Results go to the task-local buffer
  /// `buffer` at [b][row - i_begin][col - j_begin] (rows of the plan's col_block floats, partial
  /// sums reloaded from there), no epilogue; then `finish` reads them for the block whose first
  /// row and column are (i_begin, j_begin) and writes the output. Winograd's conv: the batch
  /// entries are the 16 transform positions, the finish its output transform.
  struct BatchInTask {
    std::string buffer;
    std::function<ir::Stmt(const ir::Expr& i_begin, const ir::Expr& j_begin)> finish;
  };
  std::optional<BatchInTask> batch_in_task;
};
/// A plain matmul's operands: inputs "in0" (A) and "in1" (B) as MatMulParams lays them out.
GemmOperands MatMulOperands(const ir::MatMulParams& p);

/// The loop nest of `plan` (params as KernelParams(w)), reading A and B through `operands`
/// (MatMulOperands(plan.p) when absent). The output is [batch, m, n] row-major; the epilogue is
/// applied at (b * m + row, col).
ir::Stmt LowerBlockedPlan(const BlockedPlan& plan, const EpilogueBuilder& epilogue);
ir::Stmt LowerBlockedPlan(const BlockedPlan& plan, const EpilogueBuilder& epilogue,
                          const GemmOperands& operands);

/// INVALID_ARGUMENT unless `w` is a consistent matmul (positive sizes, shapes matching params).
absl::Status CheckMatMulShapes(const ir::Workload& w);

}  // namespace gtco::kernels::internal
