// BuildProgram: the one entry point from a schedule trace to a program a worker or an
// ahead-of-time export runs. It replays the trace through its kernel family (registry.h) and
// returns the code (LLVM bitcode for CPU families, CUDA C for CUDA families), how to call it (the
// buffers and, on CUDA, the launch) and the cost model's features of it.
//
// Kernel ABI: `<entry>(in0, ..., out)`: the workload's inputs in order, then its output, each a
// dense row-major buffer of the dtype's storage (f32 as float, f16/bf16 as 16-bit bits, u8/i8 as
// bytes, i32 as int); on CUDA device pointers to an `extern "C" __global__` function.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/costmodel/cost_model.h"
#include "common/ir/loop_ir.h"
#include "common/ir/workload.h"
#include "common/schedule/cuda_sketch.h"
#include "common/schedule/trace.h"
#include "common/target/target.h"

namespace gtco::kernels {

/// The entry-point name BuildProgram gives kernels unless told otherwise.
inline constexpr char kDefaultEntry[] = "gtco_kernel";

/// One compiled-to-be program of a (workload, trace) on a target.
struct Program {
  target::Target target = target::Target::kCpu;
  /// "llvm-bc" (LLVM bitcode of one function) or "cuda-c" (self-contained CUDA C source).
  std::string language;
  std::string code;
  std::string entry;
  /// The kernel's buffers in call order: the workload's inputs, then its output.
  std::vector<ir::TensorDesc> buffers;
  /// CUDA only: grid, block, dynamic shared memory, architecture and the geometry the cost model
  /// reads.
  schedule::CudaPlan launch;
  /// The cost model's features of this program (costmodel::FeatureNames() layout of the target);
  /// empty from BuildCode.
  costmodel::Features features;
  /// CPU, BuildCode only: the loop nest the code was emitted from.
  std::optional<ir::LoweredFunc> loop_func;
};

/// Whether this build can build programs for `target`: CUDA always (CUDA C needs no toolkit), CPU
/// only when built with LLVM.
bool CanBuildFor(target::Target target);

/// The program of trace `t` for `w` on `hw`'s target, with its function named `entry`.
/// INVALID_ARGUMENT when `t` does not replay for `w` (unknown sketch, a sketch of another target
/// or workload class, wrong decisions, shapes the sketch cannot take); FAILED_PRECONDITION for a
/// CPU trace in a build without LLVM.
absl::StatusOr<Program> BuildProgram(const ir::Workload& w, const schedule::Trace& t,
                                     const target::HardwareInfo& hw,
                                     const std::string& entry = kDefaultEntry);

/// BuildProgram without the features (what a worker that replays a trace needs); `target` is
/// the program's target.
absl::StatusOr<Program> BuildCode(const ir::Workload& w, const schedule::Trace& t,
                                  target::Target target, const std::string& entry = kDefaultEntry);

/// The cost-model features BuildProgram would return, without generating code (CUDA: from the
/// plan; CPU: from the loop nest). INVALID_ARGUMENT when `t` does not replay for `w`.
absl::StatusOr<costmodel::Features> ProgramFeatures(const ir::Workload& w, const schedule::Trace& t,
                                                    const target::HardwareInfo& hw);

/// A CUDA kernel: its source, entry and plan.
struct CudaKernel {
  std::string source;  ///< CUDA C, self-contained (no #include: NVRTC compiles it anywhere)
  std::string entry;   ///< the __global__ function's name
  schedule::CudaPlan plan;
};

/// The CUDA kernel of trace `t` for `w` (BuildProgram's CUDA half, without features).
/// INVALID_ARGUMENT when `t` is not a CUDA trace for `w` or `w`'s shapes do not fit the sketch.
absl::StatusOr<CudaKernel> GenerateCudaKernel(const ir::Workload& w, const schedule::Trace& t,
                                              const std::string& entry);

}  // namespace gtco::kernels
