// Loop-nest analysis behind the cost model's features: one summary per statement (its enclosing
// loops with estimated extents, operation counts, and every memory access with its strides
// along each enclosing loop), plus cache-footprint estimates over loop levels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/ir/loop_ir.h"

namespace gtco::costmodel {

/// One enclosing loop of a statement, with its extent estimated at the representative
/// iteration point (every outer loop at its first iteration). Unknown extents count as 1.
struct LoopFrame {
  std::string var;
  ir::ForKind kind = ir::ForKind::kSerial;
  int64_t extent = 1;
};

/// One Load or Store of a statement.
struct Access {
  std::string buffer;
  bool is_store = false;
  bool is_global = false;        ///< a kernel parameter (not an Allocate)
  int64_t buffer_elements = 0;   ///< size of the buffer (0 when unknown)
  int buffer_element_bytes = 4;  ///< bytes of one buffer element (the unit of the index)
  int access_bytes = 4;          ///< bytes one execution moves (a wide i32 load of u8: 4)
  /// False when the index could not be evaluated (it reads memory or unknown variables): a
  /// gather. Then `strides` is empty.
  bool evaluable = false;
  /// Per enclosing loop (same order as StmtSummary::loops): index change in elements when
  /// that loop advances by one iteration from its first.
  std::vector<int64_t> strides;
  /// Per enclosing loop: whether the second step changes the index by the same amount.
  std::vector<bool> affine;
};

/// Calls to libm-like functions per execution, by cost class.
struct CallCounts {
  double exp_like = 0;  ///< exp, pow, sigmoid
  double erf_tanh = 0;  ///< erf, tanh
  double sqrt_abs = 0;  ///< sqrt, fabs
};

/// A Store (or an expression site that is not a store: an If condition, a Let value).
struct StmtSummary {
  std::vector<LoopFrame> loops;  ///< outermost first
  double executions = 0;         ///< product of extents times branch weights
  /// Compute operations per execution: arithmetic on f32/i32 values, value casts, math calls,
  /// and the multiply-adds of dot-product intrinsics (dot_u8s8x4: 8, dot_bf16x2: 4).
  double float_ops = 0;
  double int_ops = 0;            ///< index (i64) arithmetic per execution
  CallCounts calls;              ///< per execution
  std::vector<Access> accesses;  ///< loads first, then the store (if any)
  bool is_store = false;
  bool is_global_store = false;
  /// The stored value reads the element it overwrites (buf[i] = f(buf[i], ...)).
  bool accumulates = false;
};

/// Static facts and the statement summaries of one kernel.
struct NestSummary {
  std::vector<StmtSummary> stmts;
  int num_loops[4] = {0, 0, 0, 0};  ///< static loop count per ir::ForKind
  int max_loop_depth = 0;
  int64_t max_parallel_extent = 0;  ///< 0 when there is no parallel loop
  std::vector<int64_t> allocate_bytes;
  double branch_executions = 0;  ///< dynamic If evaluations
  double overhead_int_ops = 0;   ///< dynamic index arithmetic outside sites (bounds, lets)
  int64_t global_bytes = 0;      ///< sum of the kernel parameters' sizes in bytes
};

/// Walks `func`'s loop nest. Deterministic.
NestSummary AnalyzeLoopNest(const ir::LoweredFunc& func);

/// Index of the first loop of "level" `level` in `stmt.loops`: level 0 is the loops inside the
/// innermost serial/parallel loop (unrolled and vectorized loops only), level n adds the n
/// innermost serial/parallel loops; a level past the outermost one is the whole nest (0).
int LevelStart(const StmtSummary& stmt, int level);

/// Number of serial/parallel loops around `stmt`.
int SerialDepth(const StmtSummary& stmt);

/// Estimated bytes of distinct cache lines (64 B) the statement touches while the loops from
/// `first_loop` inward run once (outer loops fixed), summed over buffers.
double FootprintBytes(const StmtSummary& stmt, int first_loop);

/// Product of the extents of the unrolled and vectorized loops along which `access` does not
/// move: the compiler loads it once for all their iterations (register reuse). 1 for gathers.
double RegisterReuse(const StmtSummary& stmt, const Access& access);

/// Product of the extents of loops [begin, end) of `stmt`.
double TripCount(const StmtSummary& stmt, int begin, int end);

}  // namespace gtco::costmodel
