// CUDA C code generation: replays a CUDA schedule trace (common/schedule/cuda_sketch.h) into one
// self-contained kernel source (no #include, so it compiles with NVRTC on any machine that has
// NVRTC, without the toolkit's headers) plus its launch plan.
//
// Kernel ABI: `extern "C" __global__ void <entry>(const T0* in0, ..., OutT* out)` — the
// workload's inputs in order, then its output, each a device pointer to the dtype's storage
// (f32 as float, f16/bf16 as 16-bit bits, u8/i8 as bytes, i32 as int), dense row-major.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "common/ir/workload.h"
#include "common/schedule/cuda_sketch.h"
#include "common/schedule/trace.h"

namespace gtco::codegen {

struct CudaKernel {
  std::string source;  ///< CUDA C, self-contained
  std::string entry;   ///< the __global__ function's name
  schedule::CudaPlan plan;
};

/// The kernel for (w, t). INVALID_ARGUMENT when `t` is not a CUDA trace for `w` (unknown sketch,
/// wrong decisions) or `w`'s shapes do not fit the sketch.
absl::StatusOr<CudaKernel> GenerateCudaKernel(const ir::Workload& w, const schedule::Trace& t,
                                              const std::string& entry);

}  // namespace gtco::codegen
