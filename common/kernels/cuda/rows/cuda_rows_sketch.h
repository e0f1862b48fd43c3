// CUDA schedules of the row-wise workloads (softmax, layernorm, reduce_mean: mapping "warp_rows")
// and of the element-wise ones (anchor none: mapping "simt"). This header holds what the sketches'
// plans and the code generators (common/codegen/cuda/rows_gen.cc, elementwise_gen.cc) must agree
// on: the knobs decoded against a workload, the shared-memory layout of the row reductions and
// the collapsed view of an element-wise output.
//
// Kernels assume every tensor pointer is aligned to 16 bytes (cudaMalloc gives 256) and read
// rows with vector loads of `vector_width` elements, so the row length must be a multiple of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/kernels/broadcast.h"
#include "common/kernels/family.h"
#include "common/schedule/sketch.h"

namespace gtco::kernels {

/// How a row kernel holds a row between its passes.
enum class CudaRowStrategy {
  /// The thread's slice of the row stays in registers: one read of X from memory, then the
  /// statistics and the output from registers (softmax: max, sum of exp, write; layernorm: mean,
  /// centered sum of squares, write).
  kCached = 0,
  /// A streaming pass computes the statistics (softmax: online max with a rescaled sum;
  /// layernorm: Welford mean and M2; reduce_mean: the sum), a second pass re-reads X (from L2)
  /// to write. For rows too long for registers.
  kStreaming = 1,
};

/// The knobs of "cuda_softmax/v1" and "cuda_layernorm/v1" (tpr, rpb, vw, strategy, unroll,
/// split) and of "cuda_reduce_mean/v1" (tpr, rpb, vw, unroll, split; always streaming), decoded
/// against a workload, with the derived row geometry.
struct CudaRowsConfig {
  ir::AnchorKind anchor = ir::AnchorKind::kSoftmax;
  int64_t rows = 1, cols = 1;
  int threads_per_row = 32;  ///< power of two in [1, 1024]: threads sharing one row (per block)
  int rows_per_block = 1;    ///< power of two: rows one block computes side by side
  int vector_width = 1;      ///< elements per vector access; divides cols
  CudaRowStrategy strategy = CudaRowStrategy::kCached;
  int unroll = 1;                 ///< vector groups loaded together per step of a streaming pass
  int blocks_per_row = 1;         ///< > 1: a thread-block cluster (sm_90+) shares each row
  int64_t vector_groups = 1;      ///< groups of vector_width elements in a row: cols / vw
  int64_t groups_per_block = 1;   ///< groups of the row slice one block handles
  int64_t groups_per_thread = 1;  ///< ceil(groups_per_block / threads_per_row)

  int Threads() const { return threads_per_row * rows_per_block; }
  /// Block-wide reductions of one row through shared memory (more than a warp per row).
  bool CrossWarp() const { return threads_per_row > 32; }
  /// Floats of the thread's cached row slice (kCached).
  int64_t CachedFloats() const { return groups_per_thread * vector_width; }
};

/// Knob names in trace order for `anchor` (a row anchor).
std::vector<std::string> CudaRowsKnobNames(ir::AnchorKind anchor);
/// Decodes `values` (in CudaRowsKnobNames(w.anchor) order) for row workload `w`.
/// INVALID_ARGUMENT when a value is out of the sketch's structural range or `w`'s shapes are not
/// [rows, cols] (+ scale, bias [cols] for layernorm).
absl::StatusOr<CudaRowsConfig> DecodeCudaRows(const ir::Workload& w, const KnobValues& values);

/// Reductions of one row and the floats each carries, which size the shared memory of
/// cross-warp and cluster reductions: softmax 2 x 1 (max, sum), layernorm cached 2 x 1 (sum,
/// centered squares), layernorm streaming 1 x 3 (Welford count, mean, M2), reduce_mean 1 x 1.
struct CudaRowReductions {
  int count = 1;
  int floats = 1;
};
CudaRowReductions RowReductions(const CudaRowsConfig& config);

/// Dynamic shared memory of a row kernel in floats: two buffers (row-loop iterations alternate
/// between them, so one barrier per reduction suffices), each holding per reduction and float one
/// entry per warp of the block (cross-warp step) plus one for the block's own value, which the
/// cluster's other blocks read (cluster step). 0 when a row fits one warp and one block.
int64_t RowSharedFloats(const CudaRowsConfig& config);


/// The knobs of "cuda_elementwise/v1" (block, vw, ept, iters) decoded against a workload.
struct CudaElementwiseConfig {
  int block = 256;            ///< threads per block
  int vector_width = 1;       ///< consecutive output elements per vector group; divides `last`
  int groups_per_thread = 1;  ///< vector groups one thread computes per grid-stride step
  int iters = 1;              ///< grid-stride steps per thread (1: one pass over the grid)
  int64_t elements = 1;       ///< output elements
  int64_t last = 1;           ///< innermost dim of the collapsed view
  int64_t groups = 1;         ///< elements / vector_width
  int64_t GroupsPerBlockStep() const { return int64_t{block} * groups_per_thread; }
};

/// Knob names of "cuda_elementwise/v1" in trace order.
std::vector<std::string> CudaElementwiseKnobNames();
/// Decodes `values` for element-wise workload `w`; INVALID_ARGUMENT as DecodeCudaRows.
absl::StatusOr<CudaElementwiseConfig> DecodeCudaElementwise(const ir::Workload& w,
                                                            const KnobValues& values);

/// Largest grid_x a plan uses; larger problems loop (grid-stride) inside the kernel.
inline constexpr int64_t kCudaMaxGridX = (int64_t{1} << 31) - 1;

/// The CudaGenerators of the family (rows_gen.cc, elementwise_gen.cc) for "cuda_softmax/v1",
/// "cuda_layernorm/v1", "cuda_reduce_mean/v1" and "cuda_elementwise/v1".
absl::StatusOr<std::string> GenerateCudaSoftmax(const ir::Workload& w, const KnobValues& values,
                                                const CudaPlan& plan, const std::string& entry);
absl::StatusOr<std::string> GenerateCudaLayerNorm(const ir::Workload& w, const KnobValues& values,
                                                  const CudaPlan& plan, const std::string& entry);
absl::StatusOr<std::string> GenerateCudaReduceMean(const ir::Workload& w, const KnobValues& values,
                                                   const CudaPlan& plan, const std::string& entry);
absl::StatusOr<std::string> GenerateCudaElementwise(const ir::Workload& w, const KnobValues& values,
                                                    const CudaPlan& plan, const std::string& entry);

}  // namespace gtco::kernels
