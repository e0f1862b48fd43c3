// CUDA sketches: schedule templates whose traces lower to CUDA C (common/codegen/cuda) rather
// than to the loop IR, and the GPU resource model that prunes them. A CudaSketch states, for
// knob values, the launch geometry and resources a kernel will use (its CudaPlan) without
// generating code, so pruning, the cost model and the code generator agree on one plan.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/schedule/mapping.h"
#include "common/schedule/sketch.h"
#include "common/schedule/trace.h"

namespace gtco::schedule {

/// Launch geometry and resource use of one CUDA schedule.
struct CudaPlan {
  int64_t grid_x = 1, grid_y = 1, grid_z = 1;
  int block_x = 32, block_y = 1, block_z = 1;
  int64_t dynamic_shared_bytes = 0;  ///< requested at launch (static shared memory: none)
  int est_registers = 32;            ///< estimated 32-bit registers per thread
  /// Architecture-specific target needed beyond the device's compute capability, e.g. "sm_90a"
  /// for wgmma; empty when plain sm_XY code suffices.
  std::string arch;
  // Geometry the cost model reads (0 where meaningless for the workload class).
  int64_t tile_m = 0, tile_n = 0, tile_k = 0;  ///< block tile of a matmul; rows per block
  int stages = 1;                              ///< shared-memory pipeline depth
  int vector_width = 1;                        ///< elements per global load
  bool tensor_core = false;

  int64_t Threads() const { return int64_t{block_x} * block_y * block_z; }
  int64_t Blocks() const { return grid_x * grid_y * grid_z; }
};

/// A kernel family's CUDA C generator: the complete kernel source (codegen::cuda::Prelude() first)
/// for (w, values) whose plan is `plan`, with the __global__ function named `entry`. `values` are
/// in the sketch's knob order and come from its Knobs(); INVALID_ARGUMENT when `w`'s shapes do
/// not fit them.
using CudaGenerator = absl::StatusOr<std::string> (*)(const ir::Workload& w,
                                                      const KnobValues& values,
                                                      const CudaPlan& plan,
                                                      const std::string& entry);

/// A sketch whose kernels are CUDA C (there is no loop-IR form): kernels::BuildProgram replays its
/// traces through its plan and its Generator().
class CudaSketch : public Sketch {
 public:
  /// The plan of (w, values) for values from Knobs(); pure arithmetic, no hardware checks.
  virtual CudaPlan Plan(const ir::Workload& w, const KnobValues& values) const = 0;
  /// The kernel family's generator (see CudaGenerator).
  virtual CudaGenerator Generator() const = 0;
};

/// A mapping whose sketch is a CudaSketch; Target() is kCuda.
class CudaMappingSketch : public MappingSketch {
 public:
  target::Target Target() const override { return target::Target::kCuda; }
  const Sketch& sketch() const final { return cuda_sketch(); }
  virtual const CudaSketch& cuda_sketch() const = 0;
};

/// Resident blocks of `plan` per SM on `hw` (limited by threads, shared memory, registers and
/// the per-SM block limit); 0 when one block cannot be resident at all.
int64_t CudaBlocksPerSm(const target::HardwareInfo& hw, const CudaPlan& plan);

/// The GPU resource rules, in order: "threads_per_block" (more than the device allows, or not a
/// whole number of warps), "shared_memory" (over the per-block opt-in maximum), "register_file"
/// (estimated registers over 255 per thread or over the block's register file), "occupancy"
/// (fewer than 4 resident warps per SM: latency cannot be hidden). nullptr when all hold.
const char* CudaResourceRule(const target::HardwareInfo& hw, const CudaPlan& plan);

/// Empty when `hw` is a CUDA device of compute capability >= `min_sm`, else the reason.
std::string MissingCudaArch(const target::HardwareInfo& hw, int min_sm);

}  // namespace gtco::schedule
